// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-hca: resource bookkeeping (the driver owns MTT allocation, PD numbers,
 * MPT indexes and their key tags; docs/memory-regions.md) and ring buffers.
 */
#include <linux/bitmap.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include "chpp_hca.h"

int chpp_res_init(struct chpp_dev *dev)
{
	ida_init(&dev->pd_ida);
	ida_init(&dev->mpt_ida);
	ida_init(&dev->cq_ida);
	ida_init(&dev->qp_ida);
	ida_init(&dev->uar_ida);
	ida_init(&dev->srq_ida);
	xa_init_flags(&dev->cq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&dev->mtt_lock);
	spin_lock_init(&dev->db_lock);
	dev->mtt_bitmap = bitmap_zalloc(dev->caps.max_mtt_entries, GFP_KERNEL);
	dev->mpt_tag = kzalloc(dev->caps.max_mpts, GFP_KERNEL);
	if (!dev->mtt_bitmap || !dev->mpt_tag) {
		chpp_res_cleanup(dev);
		return -ENOMEM;
	}
	return 0;
}

void chpp_res_cleanup(struct chpp_dev *dev)
{
	bitmap_free(dev->mtt_bitmap);
	dev->mtt_bitmap = NULL;
	kfree(dev->mpt_tag);
	dev->mpt_tag = NULL;
	ida_destroy(&dev->pd_ida);
	ida_destroy(&dev->mpt_ida);
	ida_destroy(&dev->cq_ida);
	ida_destroy(&dev->qp_ida);
	ida_destroy(&dev->uar_ida);
	ida_destroy(&dev->srq_ida);
	xa_destroy(&dev->cq_xa);
	xa_destroy(&dev->srq_xa);
	xa_destroy(&dev->qp_xa);
}

int chpp_mtt_alloc(struct chpp_dev *dev, u32 n, u32 *base)
{
	unsigned long start;

	spin_lock(&dev->mtt_lock);
	start = bitmap_find_next_zero_area(dev->mtt_bitmap,
					   dev->caps.max_mtt_entries, 0, n, 0);
	if (start >= dev->caps.max_mtt_entries) {
		spin_unlock(&dev->mtt_lock);
		return -ENOMEM;
	}
	bitmap_set(dev->mtt_bitmap, start, n);
	spin_unlock(&dev->mtt_lock);
	*base = start;
	return 0;
}

void chpp_mtt_free(struct chpp_dev *dev, u32 base, u32 n)
{
	spin_lock(&dev->mtt_lock);
	bitmap_clear(dev->mtt_bitmap, base, n);
	spin_unlock(&dev->mtt_lock);
}

/* WRITE_MTT in chunks of CHPP_MTT_PER_MAILBOX entries. */
int chpp_write_mtt(struct chpp_dev *dev, u32 first, const u64 *entries, u32 n)
{
	struct chpp_mbox mb;
	struct chpp_write_mtt *w;
	u32 i;
	int err;

	err = chpp_mbox_alloc(dev, &mb);
	if (err)
		return err;
	w = mb.buf;
	while (n) {
		u32 cnt = min_t(u32, n, CHPP_MTT_PER_MAILBOX);

		memset(w, 0, 16);
		w->first_index = cpu_to_le64(first);
		for (i = 0; i < cnt; i++)
			w->entries[i] = cpu_to_le64(entries[i]);
		err = chpp_cmd(dev, CHPP_CMD_WRITE_MTT, mb.dma, cnt, 0, NULL);
		if (err)
			break;
		first += cnt;
		entries += cnt;
		n -= cnt;
	}
	chpp_mbox_free(dev, &mb);
	return err;
}

/* Contiguous, zeroed DMA memory, mapped by consecutive 4 KiB MTT entries. */
int chpp_buf_alloc(struct chpp_dev *dev, size_t size, struct chpp_buf *buf)
{
	u64 *ents;
	u32 i;
	int err;

	buf->size = PAGE_ALIGN(size);
	buf->npages = buf->size >> PAGE_SHIFT;
	buf->va = dma_alloc_coherent(&dev->pdev->dev, buf->size, &buf->dma,
				     GFP_KERNEL);
	if (!buf->va)
		return -ENOMEM;
	memset(buf->va, 0, buf->size);
	err = chpp_mtt_alloc(dev, buf->npages, &buf->mtt_base);
	if (err)
		goto free_mem;
	ents = kcalloc(buf->npages, sizeof(u64), GFP_KERNEL);
	if (!ents) {
		err = -ENOMEM;
		goto free_mtt;
	}
	for (i = 0; i < buf->npages; i++)
		ents[i] = ((u64)buf->dma + ((u64)i << PAGE_SHIFT)) | CHPP_MTT_VALID;
	err = chpp_write_mtt(dev, buf->mtt_base, ents, buf->npages);
	kfree(ents);
	if (err)
		goto free_mtt;
	return 0;

free_mtt:
	chpp_mtt_free(dev, buf->mtt_base, buf->npages);
free_mem:
	dma_free_coherent(&dev->pdev->dev, buf->size, buf->va, buf->dma);
	buf->va = NULL;
	return err;
}

/*
 * Free a ring. Its MTT entries are rewritten as 0 (not valid) first so that a
 * later reuse of the indexes never points at freed memory.
 */
void chpp_buf_free(struct chpp_dev *dev, struct chpp_buf *buf)
{
	u64 *zeros;

	if (!buf->va && !buf->umem)
		return;
	zeros = kcalloc(buf->npages, sizeof(u64), GFP_KERNEL);
	if (zeros) {
		chpp_write_mtt(dev, buf->mtt_base, zeros, buf->npages);
		kfree(zeros);
	}
	chpp_mtt_free(dev, buf->mtt_base, buf->npages);
	if (buf->umem) {
		ib_umem_release(buf->umem);
		buf->umem = NULL;
		return;
	}
	dma_free_coherent(&dev->pdev->dev, buf->size, buf->va, buf->dma);
	buf->va = NULL;
}
