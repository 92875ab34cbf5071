#include "rec_model.h"

static const rec_model *const models[] = {&rec_model_frame_stack, &rec_model_callinfo_frame};

const rec_model *rec_model_of(zs_model id)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (models[i]->id == id)
            return models[i];
    return NULL;
}
