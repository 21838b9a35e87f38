/* methods_beff.c - placeholder while the method is written (not yet in a release). */
#include "methods.h"

const nb_command nb_command_beff = {
    .name = "beff",
    .summary = "(being written)",
    .description = "(being written)",
    .accepted_options = NB_OPT_JSON | NB_OPT_JSON_FILE,
    .all_ranks = 1,
};

void nb_run_beff(const nb_context *ctx)
{
    (void)ctx;
}
