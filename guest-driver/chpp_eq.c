// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: the event queue, its MSI-X vector and event dispatch
 * (docs/event-queues.md).
 */
#include <linux/interrupt.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include "chpp_hca.h"

#define CHPP_ASYNC_EVENTS \
	((1ull << CHPP_EVENT_PATH_MIG) | (1ull << CHPP_EVENT_COMM_EST) | \
	 (1ull << CHPP_EVENT_SQ_DRAINED) | (1ull << CHPP_EVENT_CQ_ERROR) | \
	 (1ull << CHPP_EVENT_WQ_CATAS_ERROR) | (1ull << CHPP_EVENT_LOCAL_CATAS) | \
	 (1ull << CHPP_EVENT_PORT_CHANGE) | (1ull << CHPP_EVENT_EQ_OVERFLOW) | \
	 (1ull << CHPP_EVENT_WQ_INVAL_REQ) | (1ull << CHPP_EVENT_WQ_ACCESS_ERROR) | \
	 (1ull << CHPP_EVENT_DOORBELL_ERROR) | \
	 (1ull << CHPP_EVENT_LAST_WQE_REACHED) | \
	 (1ull << CHPP_EVENT_SRQ_LIMIT) | (1ull << CHPP_EVENT_SRQ_CATAS_ERROR))

static void chpp_handle_eqe(struct chpp_dev *dev, const struct chpp_eqe *eqe)
{
	struct device *d = &dev->pdev->dev;

	switch (eqe->type) {
	case CHPP_EVENT_CMD:
		chpp_cmd_event(dev, eqe);
		break;
	case CHPP_EVENT_COMP:
		chpp_cq_event(dev, le32_to_cpu(eqe->event.cq.cqn), false);
		break;
	case CHPP_EVENT_CQ_ERROR:
		dev_err(d, "CQ %u error (overrun or ring access error)\n",
			le32_to_cpu(eqe->event.cq.cqn));
		chpp_cq_event(dev, le32_to_cpu(eqe->event.cq.cqn), true);
		break;
	case CHPP_EVENT_PORT_CHANGE:
		dev_info(d, "port %u is now %s\n",
			 le32_to_cpu(eqe->event.port.port),
			 eqe->subtype == CHPP_PORT_ACTIVE ? "ACTIVE" : "DOWN");
		chpp_port_event(dev, eqe->subtype);
		break;
	case CHPP_EVENT_COMM_EST:
	case CHPP_EVENT_SQ_DRAINED:
	case CHPP_EVENT_PATH_MIG:
	case CHPP_EVENT_LAST_WQE_REACHED:
		chpp_qp_event(dev, le32_to_cpu(eqe->event.qp.qpn), eqe->type);
		break;
	case CHPP_EVENT_WQ_CATAS_ERROR:
	case CHPP_EVENT_WQ_INVAL_REQ:
	case CHPP_EVENT_WQ_ACCESS_ERROR:
		dev_err(d, "QP %u error event %s\n",
			le32_to_cpu(eqe->event.qp.qpn),
			chpp_event_name(eqe->type));
		chpp_qp_event(dev, le32_to_cpu(eqe->event.qp.qpn), eqe->type);
		break;
	case CHPP_EVENT_SRQ_LIMIT:
	case CHPP_EVENT_SRQ_CATAS_ERROR:
		chpp_srq_event(dev, le32_to_cpu(eqe->event.srq.srqn), eqe->type);
		break;
	case CHPP_EVENT_VF_FLR:
		chpp_vf_flr_event(dev, le32_to_cpu(eqe->event.vf.vf));
		break;
	case CHPP_EVENT_EQ_OVERFLOW:
		dev_err(d, "EQ %u overran: events were lost\n",
			le32_to_cpu(eqe->event.eq_overflow.eqn));
		break;
	case CHPP_EVENT_LOCAL_CATAS:
		dev_err(d, "local catastrophic error\n");
		if (dev->ib_registered) {
			struct ib_event ev = {
				.device = &dev->ibdev,
				.event = IB_EVENT_DEVICE_FATAL,
			};
			ib_dispatch_event(&ev);
		}
		break;
	case CHPP_EVENT_DOORBELL_ERROR:
		if (eqe->subtype == CHPP_DB_ERR_FIFO_OVERFLOW) {
			u32 v = le32_to_cpu(eqe->event.db_error.value);

			/*
			 * ABI 1.4: one event stands for every QP that lost a
			 * doorbell until QUERY_DB_LOST answers it.
			 */
			if (dev->fw.abi_minor >= 4)
				schedule_work(&dev->db_lost_work);
			else
				chpp_qp_sq_redoorbell(dev, v >> CHPP_UAR_DB_QPN_SHIFT);
		} else {
			dev_err(d, "doorbell refused: offset 0x%x value 0x%llx uar 0x%x\n",
				le32_to_cpu(eqe->event.db_error.offset),
				(u64)le32_to_cpu(eqe->event.db_error.value_hi) << 32 |
				le32_to_cpu(eqe->event.db_error.value),
				le32_to_cpu(eqe->event.db_error.uar));
		}
		break;
	default:
		dev_warn(d, "unknown event type 0x%02x subtype 0x%02x\n",
			 eqe->type, eqe->subtype);
	}
}

/*
 * A FIFO_OVERFLOW event (ABI 1.4): read and clear the QPs whose doorbell the
 * FIFO lost, which answers the event, then have the device announce each
 * one's work with RING_SQ. Doorbells lost from then on raise a new event.
 */
void chpp_db_lost_work(struct work_struct *work)
{
	struct chpp_dev *dev = container_of(work, struct chpp_dev,
					    db_lost_work);
	struct chpp_db_lost *lost;
	u32 qpn, nqps, n = 0;

	lost = kzalloc(sizeof(*lost), GFP_KERNEL);
	if (!lost)
		return;
	/* A failure is logged by chpp_cmd; the marks stay on the device. */
	if (chpp_cmd_query(dev, CHPP_CMD_QUERY_DB_LOST, 0, lost, sizeof(*lost)))
		goto out;
	nqps = min_t(u32, le32_to_cpu(lost->num_qps), CHPP_MAX_QPS);
	for (qpn = 0; qpn < nqps; qpn++) {
		if (!(lost->qps[qpn / 8] & BIT(qpn % 8)))
			continue;
		chpp_qp_sq_redoorbell(dev, qpn);
		n++;
	}
	/* 0: a RING_SQ or an earlier query answered it already. */
	if (n)
		dev_info_ratelimited(&dev->pdev->dev,
				     "doorbell FIFO overflow: %u QP(s) lost a doorbell, recovered with RING_SQ\n",
				     n);
out:
	kfree(lost);
}

/* Consume every valid EQE, then write the doorbell with the new CI and ARM. */
static int chpp_eq_poll(struct chpp_dev *dev)
{
	struct chpp_eq *eq = &dev->eq;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&eq->lock, flags);
	for (;;) {
		struct chpp_eqe *eqe = &eq->ring[eq->ci & (eq->n - 1)];
		u32 want = ((eq->ci / eq->n) & 1) ^ 1;

		if (!!(le32_to_cpu(READ_ONCE(eqe->owner)) & CHPP_EQE_OWNER) != want)
			break;
		dma_rmb();	/* owner before the rest of the entry */
		chpp_handle_eqe(dev, eqe);
		eq->ci++;
		n++;
	}
	chpp_wr(dev, CHPP_REG_EQ_DB(eq->eqn),
		(eq->ci & CHPP_EQ_DB_CI_MASK) | CHPP_EQ_DB_ARM);
	spin_unlock_irqrestore(&eq->lock, flags);
	return n;
}

static irqreturn_t chpp_eq_irq(int irq, void *arg)
{
	struct chpp_dev *dev = arg;

	atomic_inc(&dev->irq_count);
	chpp_eq_poll(dev);
	return IRQ_HANDLED;
}

int chpp_eq_init(struct chpp_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	struct chpp_eq *eq = &dev->eq;
	struct chpp_eq_context ctx = {};
	int err, nvec;

	spin_lock_init(&eq->lock);
	eq->eqn = 0;
	eq->n = CHPP_EQ_ENTRIES;
	eq->ci = 0;
	eq->ring = dma_alloc_coherent(&pdev->dev, eq->n * CHPP_EQE_SIZE,
				      &eq->dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	memset(eq->ring, 0, eq->n * CHPP_EQE_SIZE);

	nvec = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_err(&pdev->dev, "no MSI-X vector: %d\n", nvec);
		err = nvec;
		goto free_ring;
	}
	err = request_irq(pci_irq_vector(pdev, 0), chpp_eq_irq, 0,
			  DRV_NAME, dev);
	if (err)
		goto free_vec;
	dev->irq_requested = true;

	ctx.base_addr = cpu_to_le64(eq->dma);
	ctx.num_entries = cpu_to_le32(eq->n);
	ctx.msix_vector = cpu_to_le16(0);
	ctx.flags = CHPP_EQ_FLAG_ARMED;
	err = chpp_cmd_in(dev, CHPP_CMD_SW2HW_EQ, eq->eqn, &ctx, sizeof(ctx));
	if (err)
		goto free_irq;
	dev->eq_hw = true;

	err = chpp_cmd(dev, CHPP_CMD_MAP_EQ,
		       CHPP_ASYNC_EVENTS | (1ull << CHPP_EVENT_CMD) |
		       (dev->caps.flags & CHPP_DEV_CAP_FLAG_VF ?
			0 : 1ull << CHPP_EVENT_VF_FLR),
		       eq->eqn, 0, NULL);
	if (err)
		goto hw2sw;
	return 0;

hw2sw:
	chpp_cmd(dev, CHPP_CMD_HW2SW_EQ, 0, eq->eqn, 0, NULL);
	dev->eq_hw = false;
free_irq:
	free_irq(pci_irq_vector(pdev, 0), dev);
	dev->irq_requested = false;
free_vec:
	pci_free_irq_vectors(pdev);
free_ring:
	dma_free_coherent(&pdev->dev, eq->n * CHPP_EQE_SIZE, eq->ring, eq->dma);
	eq->ring = NULL;
	return err;
}

void chpp_eq_cleanup(struct chpp_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	struct chpp_eq *eq = &dev->eq;

	dev->cmd_events = false;
	if (dev->eq_hw) {
		chpp_cmd(dev, CHPP_CMD_HW2SW_EQ, 0, eq->eqn, 0, NULL);
		dev->eq_hw = false;
	}
	if (dev->irq_requested) {
		free_irq(pci_irq_vector(pdev, 0), dev);
		dev->irq_requested = false;
		pci_free_irq_vectors(pdev);
	}
	if (eq->ring) {
		dma_free_coherent(&pdev->dev, eq->n * CHPP_EQE_SIZE, eq->ring,
				  eq->dma);
		eq->ring = NULL;
	}
}

/*
 * Switch commands to completion by event and check the interrupt path: a NOP
 * with e = 1 must complete through an EQE and raise the vector.
 */
int chpp_nop_selftest(struct chpp_dev *dev)
{
	int irqs = atomic_read(&dev->irq_count);
	int evs = atomic_read(&dev->cmd_event_count);
	u64 echo = 0;
	int err;

	dev->cmd_events = true;
	err = chpp_cmd(dev, CHPP_CMD_NOP, 0, 0, 0x5a5a0000c4a1ull, &echo);
	if (!err && atomic_read(&dev->cmd_event_count) == evs) {
		dev_warn(&dev->pdev->dev,
			 "NOP self-test: no command event, falling back to polling\n");
		dev->cmd_events = false;
		return 0;
	}
	if (err)
		return err;
	if (echo != 0x5a5a0000c4a1ull)
		dev_warn(&dev->pdev->dev, "NOP self-test: out_param 0x%llx not echoed\n",
			 echo);
	dev_info(&dev->pdev->dev,
		 "interrupt self-test OK (%d interrupt(s)), commands complete by events\n",
		 atomic_read(&dev->irq_count) - irqs);
	return 0;
}
