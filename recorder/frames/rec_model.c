/* SPDX-License-Identifier: BSD-3-Clause */
#include "frames/rec_model.h"

static const rec_model *const models[] = {&rec_model_frame_stack, &rec_model_callinfo_frame};

const rec_model *rec_model_of(zs_model id)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (models[i]->id == id)
            return models[i];
    return NULL;
}

size_t rec_model_frames(const zs_layout *l, const rec_raw_sample *r, zs_frame *out, int *cut)
{
    *cut = r->cut;
    rec_model_of(l->model)->frames(l, r, out);
    return r->n;
}

size_t rec_model_frame_addrs(const zs_layout *l, const rec_raw_sample *r, uint64_t *out)
{
    const rec_model *m = rec_model_of(l->model);
    if (!m->frame_addr)
        return 0;
    for (size_t i = 0; i < r->n; i++)
        out[i] = m->frame_addr(l, r, i);
    return r->n;
}

uint64_t rec_model_outermost_frame(const zs_layout *l, const rec_raw_sample *r)
{
    const rec_model *m = rec_model_of(l->model);
    return m->frame_addr && r->n ? m->frame_addr(l, r, 0) : 0;
}
