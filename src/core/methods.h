/* methods.h - what a method file includes: the declaration types (cli.h: nb_method, nb_option;
 * output.h: nb_table_spec, nb_column), the run context and the shared measurement driver
 * (measure.h). A method file defines the run function (and hooks) that the method's
 * declaration in its catalogue header names (a file may hold a few closely related methods);
 * see docs/adding-a-method.md.
 *
 * The run function is called on ranks 0 and 1 (NB_ON_PAIR; ctx->pair holds those two) or on
 * every rank (NB_ON_ALL_RANKS; ctx->pair is a duplicate of MPI_COMM_WORLD); on rank 0 it fills
 * ctx->result with the parameters, tables, summary and unreliable entries of
 * docs/output-format.md.
 */
#ifndef NETBENCH_METHODS_H
#define NETBENCH_METHODS_H

#include "common.h"
#include "measure.h"
#include "output.h"

#endif
