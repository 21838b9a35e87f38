/* pathclass.h - a pair's path class: how far up the switch tree its two hosts meet. On a
 * tapered tree or a dragonfly the pairs of different classes differ when healthy (the pairs
 * across the core share oversubscribed uplinks, a global link); the map compares a pair with
 * its own class as well as with the whole map (netbench matrix --path-classes, pairmap.h).
 *
 * The file: one line a host, its name then its switches from its leaf up (`node-5 leaf1
 * spine`; a dragonfly's `node-5 router3 group1 root`), and one line `link: A B` for each link
 * that joins two sibling switches directly (a dragonfly's global links between groups A and
 * B); `#` starts a comment, blank lines are skipped. fabricsuite writes it from the
 * partition's switch tree (python -m fabricsuite.data.pathclasses). No MPI in here
 * (libnbanalysis.so).
 */
#ifndef NETBENCH_PATHCLASS_H
#define NETBENCH_PATHCLASS_H

#include <stddef.h>

/* The most switches a host's line may name (a 3-level tree names 3, a dragonfly 3). */
#define NB_PATH_MAX_LEVELS 8
/* Classes are 0 .. NB_PATH_CLASSES - 1 (`nb_path_class`). */
#define NB_PATH_CLASSES (2 * NB_PATH_MAX_LEVELS + 1)

typedef struct {
    size_t hosts;
    char **host;          /* hosts[i]'s name */
    int *levels;          /* how many switches its line names */
    int *chain;           /* hosts x NB_PATH_MAX_LEVELS switch ids, its leaf first */
    size_t switches;
    char **switch_name;   /* by id */
    size_t links;
    long *link_keys;      /* the `link:` lines' two switch ids, unordered, sorted */
} nb_path_table;

/* Parses the file's text into *t. Returns 0, or -1 with why[] := what is wrong, naming the line
 * (t then holds nothing to free). */
int nb_path_table_parse(const char *text, nb_path_table *t, char *why, size_t why_size);

void nb_path_table_free(nb_path_table *t);

/* The index of `host` in the table, -1 when it has no line. */
long nb_path_table_host(const nb_path_table *t, const char *host);

/* The class of a pair of hosts with switch chains a (na ids, leaf first) and b: the steps up
 * from each host's leaf to the lowest switch both chains hold, summed (0: one leaf; 2: two
 * leaves under one spine, a dragonfly's two routers of a group; 4: across a dragonfly's groups
 * under its root); with none shared, na + nb. */
int nb_path_class(const int *a, int na, const int *b, int nb);

/* The link a pair's path crosses at its top where that is a `link:` line of the table: the
 * two switches just below the lowest switch both chains hold (a' from a's chain, b' from b's),
 * joined directly (a dragonfly's global links between two groups), as the link's key (its two
 * ids, unordered; a binary search of the table's links). Pairs of one round with the same
 * segment share that link. -1: one leaf, no switch shared, or a' and b' not joined directly
 * (two leaves of a tree: each pair crosses the leaves' uplinks, which every pair leaving
 * either leaf shares). */
long nb_path_segment(const nb_path_table *t, const int *a, int na, const int *b, int nb);

#endif
