/* methods.h - the measurement methods, one nb_command and one run function per subcommand.
 *
 * A run function is called on ranks 0 and 1 (ctx->pair); on rank 0 it fills ctx->result with
 * the parameters, tables, summary and unreliable entries of docs/output-format.md.
 */
#ifndef NETBENCH_METHODS_H
#define NETBENCH_METHODS_H

#include "cli.h"
#include "measure.h"

typedef void (*nb_method_run)(const nb_context *ctx);

/* methods_pt2pt.c: Bell §4.1, Zamani §4.1 */
extern const nb_command nb_command_pingpong;
extern const nb_command nb_command_bibw;
extern const nb_command nb_command_bothway;
void nb_run_pingpong(const nb_context *ctx);
void nb_run_bibw(const nb_context *ctx);
void nb_run_bothway(const nb_context *ctx);

/* methods_flood.c: Bell §4.2 */
extern const nb_command nb_command_flood;
void nb_run_flood(const nb_context *ctx);

/* methods_overlap.c: Bell §4.3, Zamani §5.6 */
extern const nb_command nb_command_overlap;
void nb_run_overlap(const nb_context *ctx);

/* methods_loggp.c: Hoefler et al. §2.2-2.6 */
extern const nb_command nb_command_loggp;
void nb_run_loggp(const nb_context *ctx);

/* Multi-rank methods (nb_command.all_ranks = 1): called on every rank; ctx->pair holds all ranks.
 * methods_dense.c: Altix study §3.3 */
extern const nb_command nb_command_dense;
void nb_run_dense(const nb_context *ctx);

/* methods_beff.c: b_eff, Rabenseifner's definition (Altix study §3.1) */
extern const nb_command nb_command_beff;
void nb_run_beff(const nb_context *ctx);

/* methods_collectives.c: individually timed collectives (Altix study §3.2, Hoefler §4) */
extern const nb_command nb_command_collectives;
void nb_run_collectives(const nb_context *ctx);

/* methods_pairs.c: all-pairs map and the distance sweep in rank space (Altix study §3.2) */
extern const nb_command nb_command_matrix;
extern const nb_command nb_command_rankdist;
void nb_run_matrix(const nb_context *ctx);
/* `matrix --print-schedule N`: prints the tournament's rounds; no MPI (called before MPI_Init).
 * Returns the exit status. */
int nb_matrix_print_schedule(const nb_options *options);
void nb_run_rankdist(const nb_context *ctx);

#endif
