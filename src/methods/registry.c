/* registry.c - every netbench method, one line each, in the order of `netbench --help`. A method
 * is declared in its family's methods/<family>_catalogue.h (its nb_method nb_method_<name>) and
 * run by methods/<family>.c; adding one is those two files and its line here
 * (docs/adding-a-method.md). */
#include "cli.h"

#define NB_REGISTRY(X)                                                                          \
    X(limits)                                                                                   \
    X(pingpong)                                                                                 \
    X(bibw)                                                                                     \
    X(bothway)                                                                                  \
    X(flood)                                                                                    \
    X(overlap)                                                                                  \
    X(loggp)                                                                                    \
    X(dense)                                                                                    \
    X(beff)                                                                                     \
    X(collectives)                                                                              \
    X(models)                                                                                   \
    X(consistency)                                                                              \
    X(matrix)                                                                                   \
    X(rankdist)                                                                                 \
    X(connections)                                                                              \
    X(loaded)                                                                                   \
    X(polling)                                                                                  \
    X(anysource)                                                                                \
    X(sendmodes)                                                                                \
    X(reuse) X(vector)                                                                          \
    /* end of the registry: add a method above this line */

#define NB_DECLARE(name) extern const nb_method nb_method_##name;
#define NB_ENTRY(name) &nb_method_##name,

NB_REGISTRY(NB_DECLARE)

const nb_method *const nb_methods[] = {NB_REGISTRY(NB_ENTRY)};
const size_t nb_method_count = sizeof nb_methods / sizeof nb_methods[0];
