/*
 * chpp-hca: a pcap capture of the link's records (chpp-hca-capture.c,
 * docs/capture.md).  Called from the main loop with the BQL held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_CHPP_HCA_CAPTURE_H
#define HW_CHPP_HCA_CAPTURE_H

#include "hw/chpp/chpp-wire.h"

typedef struct ChppCapture ChppCapture;

/* Property capture-max's default: a forgotten capture fills no disk. */
#define CHPP_CAPTURE_MAX_DEFAULT    (1ull << 30)

/* Create @path (truncated) and write the pcap file header; NULL on error. */
ChppCapture *chpp_capture_open(const char *path, uint64_t max_bytes,
                               Error **errp);
/* Close the file.  @cap may be NULL. */
void chpp_capture_close(ChppCapture *cap);
/*
 * One link record, its header @rec and @len bytes of body at @body, as the
 * node @from sent it to node @to.  @cap may be NULL (no capture).
 */
void chpp_capture_record(ChppCapture *cap, const struct chpp_link_rec *rec,
                         const uint8_t *body, uint32_t len, uint16_t from,
                         uint16_t to);

#endif
