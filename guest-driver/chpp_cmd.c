// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: HCR command interface (docs/commands.md).
 *
 * One command runs at a time (cmd_mutex). Before the EQ exists commands are
 * polled; afterwards they complete by a CMD event, with polling as the
 * fallback when the event does not arrive.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include "chpp_hca.h"

/* Names from the ABI's lists (chpp-hca-abi.h), with the log's fallbacks. */
static const char *chpp_cmd_str(u16 op)
{
	return chpp_cmd_name(op) ?: "?";
}

static const char *chpp_status_str(u8 status)
{
	return chpp_status_name(status) ?: "unknown";
}

static int chpp_status_errno(u8 status)
{
	switch (status) {
	case CHPP_STAT_OK: return 0;
	case CHPP_STAT_BAD_OP: return -EOPNOTSUPP;
	case CHPP_STAT_BAD_PARAM:
	case CHPP_STAT_BAD_QP_STATE:
	case CHPP_STAT_BAD_SIZE:
	case CHPP_STAT_BAD_INDEX: return -EINVAL;
	case CHPP_STAT_BAD_RESOURCE: return -ENOENT;
	case CHPP_STAT_RESOURCE_BUSY: return -EBUSY;
	case CHPP_STAT_EXCEED_LIM: return -ENOMEM;
	case CHPP_STAT_BAD_SYS_STATE:
	case CHPP_STAT_BAD_RES_STATE: return -EBADE;
	case CHPP_STAT_DMA_ERR:
	case CHPP_STAT_BAD_MAILBOX:
	case CHPP_STAT_INTERNAL_ERR:
	default: return -EIO;
	}
}

int chpp_mbox_alloc(struct chpp_dev *dev, struct chpp_mbox *mb)
{
	/* dma_alloc_coherent of a page is page aligned (mailbox rule). */
	mb->buf = dma_alloc_coherent(&dev->pdev->dev, CHPP_MAILBOX_SIZE,
				     &mb->dma, GFP_KERNEL);
	return mb->buf ? 0 : -ENOMEM;
}

void chpp_mbox_free(struct chpp_dev *dev, struct chpp_mbox *mb)
{
	if (mb->buf)
		dma_free_coherent(&dev->pdev->dev, CHPP_MAILBOX_SIZE, mb->buf,
				  mb->dma);
	mb->buf = NULL;
}

static bool chpp_cmd_pending(struct chpp_dev *dev)
{
	u32 ctrl = chpp_rd(dev, CHPP_REG_HCR + CHPP_HCR_CTRL);

	return (ctrl & CHPP_HCR_GO) ||
	       (!!(ctrl & CHPP_HCR_T) == dev->cmd_toggle);
}

/* Wait until the HCR is idle, polling; returns -ETIMEDOUT after 10 s. */
static int chpp_cmd_wait_idle(struct chpp_dev *dev)
{
	unsigned long end = jiffies + msecs_to_jiffies(CHPP_CMD_TIMEOUT_MS);
	unsigned int spins = 0;

	while (chpp_cmd_pending(dev)) {
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (++spins < 100)
			udelay(1);
		else
			usleep_range(20, 100);
	}
	return 0;
}

/* Called from the EQ handler for a CHPP_EVENT_CMD EQE. */
void chpp_cmd_event(struct chpp_dev *dev, const struct chpp_eqe *eqe)
{
	u16 token = le16_to_cpu(eqe->event.cmd.token);

	atomic_inc(&dev->cmd_event_count);
	if (!dev->cmd_events || token != dev->cmd_token) {
		dev_warn(&dev->pdev->dev,
			 "unexpected command event: token %u status 0x%x (expected token %u)\n",
			 token, eqe->event.cmd.status, dev->cmd_token);
		return;
	}
	dev->cmd_status = eqe->event.cmd.status;
	dev->cmd_out = ((u64)le32_to_cpu(eqe->event.cmd.out_param_hi) << 32) |
		       le32_to_cpu(eqe->event.cmd.out_param_lo);
	complete(&dev->cmd_done);
}

/*
 * Run one command. @in and @out are the in_param and out_param (mailbox DMA
 * addresses or immediate values); @out_imm receives the immediate out_param.
 */
int chpp_cmd(struct chpp_dev *dev, u16 op, u64 in, u32 mod, u64 out,
	     u64 *out_imm)
{
	struct device *d = &dev->pdev->dev;
	bool events;
	u32 ctrl;
	u8 status;
	u64 outv;
	int err;

	mutex_lock(&dev->cmd_mutex);
	events = dev->cmd_events;
	err = chpp_cmd_wait_idle(dev);
	if (err) {
		dev_err(d, "%s: HCR stays busy (go/t pending), command not sent\n",
			chpp_cmd_str(op));
		goto out;
	}
	dev->cmd_token++;
	if (events)
		reinit_completion(&dev->cmd_done);

	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_H, upper_32_bits(in));
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_IN_PARAM_L, lower_32_bits(in));
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_IN_MODIFIER, mod);
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_H, upper_32_bits(out));
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L, lower_32_bits(out));
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_TOKEN,
		(u32)dev->cmd_token << CHPP_HCR_TOKEN_SHIFT);
	ctrl = CHPP_HCR_GO | (op & CHPP_HCR_OPCODE_MASK) |
	       (dev->cmd_toggle ? CHPP_HCR_T : 0) | (events ? CHPP_HCR_E : 0);
	wmb();	/* parameters before go */
	chpp_wr(dev, CHPP_REG_HCR + CHPP_HCR_CTRL, ctrl);
	dev->cmd_toggle ^= 1;

	if (events &&
	    wait_for_completion_timeout(&dev->cmd_done,
					msecs_to_jiffies(CHPP_CMD_TIMEOUT_MS))) {
		status = dev->cmd_status;
		outv = dev->cmd_out;
	} else {
		if (events)
			dev_warn(d, "%s: no completion event, polling the HCR\n",
				 chpp_cmd_str(op));
		err = chpp_cmd_wait_idle(dev);
		if (err) {
			dev_err(d, "%s: timed out after %d ms\n",
				chpp_cmd_str(op), CHPP_CMD_TIMEOUT_MS);
			goto out;
		}
		status = chpp_rd(dev, CHPP_REG_HCR + CHPP_HCR_CTRL) >>
			 CHPP_HCR_STATUS_SHIFT;
		outv = ((u64)chpp_rd(dev, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_H) << 32) |
		       chpp_rd(dev, CHPP_REG_HCR + CHPP_HCR_OUT_PARAM_L);
	}
	if (out_imm)
		*out_imm = outv;
	err = chpp_status_errno(status);
	if (status)
		dev_err(d, "%s (modifier 0x%x) failed: status 0x%02x %s\n",
			chpp_cmd_str(op), mod, status,
			chpp_status_str(status));
out:
	mutex_unlock(&dev->cmd_mutex);
	return err;
}

/* Command with an output mailbox copied to @out. */
int chpp_cmd_query(struct chpp_dev *dev, u16 op, u32 mod, void *out,
		   size_t len)
{
	struct chpp_mbox mb;
	int err;

	err = chpp_mbox_alloc(dev, &mb);
	if (err)
		return err;
	err = chpp_cmd(dev, op, 0, mod, mb.dma, NULL);
	if (!err)
		memcpy(out, mb.buf, len);
	chpp_mbox_free(dev, &mb);
	return err;
}

/* Command with an input mailbox holding @len bytes of @in. */
int chpp_cmd_in(struct chpp_dev *dev, u16 op, u32 mod, const void *in,
		size_t len)
{
	struct chpp_mbox mb;
	int err;

	err = chpp_mbox_alloc(dev, &mb);
	if (err)
		return err;
	memset(mb.buf, 0, CHPP_MAILBOX_SIZE);
	memcpy(mb.buf, in, len);
	err = chpp_cmd(dev, op, mb.dma, mod, 0, NULL);
	chpp_mbox_free(dev, &mb);
	return err;
}
