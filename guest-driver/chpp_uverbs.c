// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: user-space access (uverbs): user contexts with their own UAR
 * page, mmap of that page, and rings in pinned user memory.
 *
 * Each context gets one UAR page of BAR2 (page 0 is the kernel's). The
 * device accepts a QP's or CQ's doorbells only through the page named in its
 * context, so a process can ring only its own queues. Rings are user memory
 * pinned with ib_umem and mapped by MTT entries, so nothing but the UAR page
 * is mmap()ed. See docs/guest-driver.md#user-space-access.
 */
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/uverbs_ioctl.h>
#include "chpp_hca.h"

struct chpp_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	u64 pfn;
};

int chpp_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct chpp_dev *dev = to_cdev(ibuc->device);
	struct chpp_ucontext *uc = to_cuc(ibuc);
	struct chpp_alloc_ucontext_resp resp = {};
	struct chpp_mmap_entry *e;
	int idx, err;

	if (dev->caps.num_uar_pages < 2)
		return -EOPNOTSUPP;
	idx = ida_alloc_range(&dev->uar_ida, CHPP_KERNEL_UAR + 1,
			      dev->caps.num_uar_pages - 1, GFP_KERNEL);
	if (idx < 0)
		return idx == -ENOSPC ? -ENOMEM : idx;
	uc->uar = idx;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		err = -ENOMEM;
		goto free_idx;
	}
	e->pfn = (dev->uar_phys + (u64)idx * CHPP_UAR_PAGE_SIZE) >> PAGE_SHIFT;
	err = rdma_user_mmap_entry_insert(ibuc, &e->rdma, PAGE_SIZE);
	if (err) {
		kfree(e);
		goto free_idx;
	}
	uc->uar_entry = &e->rdma;

	resp.abi_version = CHPP_UVERBS_ABI_VERSION;
	resp.uar_index = idx;
	resp.uar_mmap_offset = rdma_user_mmap_get_offset(&e->rdma);
	resp.node_id = dev->node_id;
	resp.qpn_bits = CHPP_QPN_BITS;
	resp.max_qp_wqes = dev->caps.max_qp_wqes;
	resp.max_cq_entries = dev->caps.max_cq_entries;
	resp.max_sge = dev->caps.max_sge;
	resp.max_inline = dev->caps.max_inline;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err)
		goto remove;
	return 0;

remove:
	rdma_user_mmap_entry_remove(uc->uar_entry);
	uc->uar_entry = NULL;
free_idx:
	ida_free(&dev->uar_ida, idx);
	return err;
}

void chpp_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct chpp_ucontext *uc = to_cuc(ibuc);

	/* The entry is freed by chpp_mmap_free once no mapping uses it. */
	rdma_user_mmap_entry_remove(uc->uar_entry);
	ida_free(&to_cdev(ibuc->device)->uar_ida, uc->uar);
}

int chpp_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma;
	struct chpp_mmap_entry *e;
	int err;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	rdma = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma)
		return -EINVAL;
	e = container_of(rdma, struct chpp_mmap_entry, rdma);
	/* Doorbells must reach the device as single, unmerged writes. */
	err = rdma_user_mmap_io(ibuc, vma, e->pfn, PAGE_SIZE,
				pgprot_noncached(vma->vm_page_prot), rdma);
	rdma_user_mmap_entry_put(rdma);
	return err;
}

void chpp_mmap_free(struct rdma_user_mmap_entry *rdma)
{
	kfree(container_of(rdma, struct chpp_mmap_entry, rdma));
}

/*
 * Map pinned user memory with MTT entries of @pgsz bytes each: allocate
 * *npages consecutive entries from *mtt_base and write them. Shared by user
 * MRs and user rings.
 */
int chpp_umem_map(struct chpp_dev *dev, struct ib_umem *umem,
		  unsigned long pgsz, u32 *mtt_base, u32 *npages)
{
	struct ib_block_iter biter;
	u64 *ents;
	u32 i = 0;
	int err;

	*npages = ib_umem_num_dma_blocks(umem, pgsz);
	err = chpp_mtt_alloc(dev, *npages, mtt_base);
	if (err)
		return err;
	ents = kvcalloc(*npages, sizeof(u64), GFP_KERNEL);
	if (!ents) {
		err = -ENOMEM;
		goto free_mtt;
	}
	rdma_umem_for_each_dma_block(umem, &biter, pgsz)
		ents[i++] = rdma_block_iter_dma_address(&biter) | CHPP_MTT_VALID;
	err = chpp_write_mtt(dev, *mtt_base, ents, *npages);
	kvfree(ents);
	if (!err)
		return 0;
free_mtt:
	chpp_mtt_free(dev, *mtt_base, *npages);
	return err;
}

/*
 * Pin a user ring of @size bytes at @addr (page aligned) and map it by 4 KiB
 * MTT entries, as chpp_buf_alloc does for kernel rings.
 */
int chpp_ubuf_get(struct chpp_dev *dev, u64 addr, size_t size,
		  struct chpp_buf *buf)
{
	int err;

	memset(buf, 0, sizeof(*buf));
	if (!size || !PAGE_ALIGNED(addr))
		return -EINVAL;
	buf->size = PAGE_ALIGN(size);
	buf->umem = ib_umem_get(&dev->ibdev, addr, buf->size,
				IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(buf->umem)) {
		err = PTR_ERR(buf->umem);
		buf->umem = NULL;
		return err;
	}
	err = chpp_umem_map(dev, buf->umem, PAGE_SIZE, &buf->mtt_base,
			    &buf->npages);
	if (err) {
		ib_umem_release(buf->umem);
		buf->umem = NULL;
	}
	return err;
}

/*
 * The doorbell FIFO lost a QP's doorbell. For a user QP the kernel does not
 * know the process's producer index, and a doorbell written with an index
 * read earlier could move it back past one the process rang meanwhile (and
 * be refused): RING_SQ makes the device announce up to the index it
 * recorded. Kernel QPs use it too: it cannot overflow the FIFO again.
 */
void chpp_qp_redoorbell_work(struct work_struct *work)
{
	struct chpp_qp *qp = container_of(work, struct chpp_qp, redb_work);
	struct chpp_dev *dev = to_cdev(qp->ibqp.device);

	mutex_lock(&qp->mutex);
	/* A reset QP has nothing to announce (and RING_SQ would fail). */
	if (qp->state != IB_QPS_RESET)
		chpp_cmd(dev, CHPP_CMD_RING_SQ, 0, qp->idx, 0, NULL);
	mutex_unlock(&qp->mutex);
}
