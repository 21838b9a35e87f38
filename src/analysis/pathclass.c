/* pathclass.c - the path-classes file and a pair's class (pathclass.h). */
#include "pathclass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The id of switch `name` (added when new), -1 when out of memory. */
static int switch_id(nb_path_table *t, const char *name, size_t *capacity)
{
    for (size_t i = 0; i < t->switches; i++)
        if (strcmp(t->switch_name[i], name) == 0)
            return (int)i;
    if (t->switches == *capacity) {
        size_t more = *capacity > 0 ? 2 * *capacity : 64;
        char **grown = realloc(t->switch_name, more * sizeof *grown);
        if (grown == NULL)
            return -1;
        t->switch_name = grown;
        *capacity = more;
    }
    t->switch_name[t->switches] = strdup(name);
    return t->switch_name[t->switches] != NULL ? (int)t->switches++ : -1;
}

/* Room for one more host line; -1 when out of memory. */
static int grow_hosts(nb_path_table *t, size_t *capacity)
{
    if (t->hosts < *capacity)
        return 0;
    size_t more = *capacity > 0 ? 2 * *capacity : 256;
    char **host = realloc(t->host, more * sizeof *host);
    if (host != NULL)
        t->host = host;
    int *levels = realloc(t->levels, more * sizeof *levels);
    if (levels != NULL)
        t->levels = levels;
    int *chain = realloc(t->chain, more * NB_PATH_MAX_LEVELS * sizeof *chain);
    if (chain != NULL)
        t->chain = chain;
    if (host == NULL || levels == NULL || chain == NULL)
        return -1;
    *capacity = more;
    return 0;
}

/* A link's key: its two switch ids, unordered (the smaller in the high half). */
static long link_key(long x, long y)
{
    return x < y ? (x << 32) | y : (y << 32) | x;
}

static int by_key(const void *x, const void *y)
{
    long a = *(const long *)x, b = *(const long *)y;
    return (a > b) - (a < b);
}

/* A `link: A B` line's two switches into the table; 0, or -1 with why[]. */
static int add_link(nb_path_table *t, char **save, size_t number, size_t *switches_cap,
                    char *why, size_t why_size)
{
    char *a = strtok_r(NULL, " \t\r", save), *b = strtok_r(NULL, " \t\r", save);
    if (a == NULL || b == NULL || strtok_r(NULL, " \t\r", save) != NULL) {
        snprintf(why, why_size, "line %zu: give `link: A B`, the two switches a link joins",
                 number);
        return -1;
    }
    int x = switch_id(t, a, switches_cap), y = switch_id(t, b, switches_cap);
    long *keys = x < 0 || y < 0 ? NULL : realloc(t->link_keys, (t->links + 1) * sizeof *keys);
    if (keys == NULL) {
        snprintf(why, why_size, "out of memory at line %zu", number);
        return -1;
    }
    t->link_keys = keys;
    keys[t->links++] = link_key(x, y);
    return 0;
}

/* One line's words (host, then switches; or a link) into the table; 0, or -1 with why[]. */
static int add_line(nb_path_table *t, char *line, size_t number, size_t *hosts_cap,
                    size_t *switches_cap, char *why, size_t why_size)
{
    char *save = NULL;
    char *host = strtok_r(line, " \t\r", &save);
    if (host == NULL)
        return 0;
    if (strcmp(host, "link:") == 0)
        return add_link(t, &save, number, switches_cap, why, why_size);
    if (nb_path_table_host(t, host) >= 0) {
        snprintf(why, why_size, "line %zu: host %s has a line already", number, host);
        return -1;
    }
    if (grow_hosts(t, hosts_cap) != 0 || (t->host[t->hosts] = strdup(host)) == NULL) {
        snprintf(why, why_size, "out of memory at line %zu", number);
        return -1;
    }
    int *chain = t->chain + t->hosts * NB_PATH_MAX_LEVELS;
    int levels = 0;
    for (char *word = strtok_r(NULL, " \t\r", &save); word != NULL;
         word = strtok_r(NULL, " \t\r", &save)) {
        if (levels == NB_PATH_MAX_LEVELS) {
            snprintf(why, why_size, "line %zu: host %s names more than %d switches", number,
                     host, NB_PATH_MAX_LEVELS);
            free(t->host[t->hosts]);
            return -1;
        }
        if ((chain[levels++] = switch_id(t, word, switches_cap)) < 0) {
            snprintf(why, why_size, "out of memory at line %zu", number);
            free(t->host[t->hosts]);
            return -1;
        }
    }
    if (levels == 0) {
        snprintf(why, why_size, "line %zu: host %s names no switch (a line: the host, then its "
                 "switches from its leaf up)", number, host);
        free(t->host[t->hosts]);
        return -1;
    }
    t->levels[t->hosts++] = levels;
    return 0;
}

int nb_path_table_parse(const char *text, nb_path_table *t, char *why, size_t why_size)
{
    memset(t, 0, sizeof *t);
    char *copy = strdup(text);
    if (copy == NULL) {
        snprintf(why, why_size, "out of memory");
        return -1;
    }
    size_t hosts_cap = 0, switches_cap = 0, number = 0;
    int status = 0;
    char *save = NULL;
    /* strtok_r would skip blank lines and so miscount; lines are split by hand */
    for (char *line = copy; status == 0 && line != NULL; line = save) {
        char *end = strchr(line, '\n');
        save = end != NULL ? end + 1 : NULL;
        if (end != NULL)
            *end = '\0';
        number++;
        line[strcspn(line, "#")] = '\0';
        status = add_line(t, line, number, &hosts_cap, &switches_cap, why, why_size);
    }
    free(copy);
    /* sorted, so that each pair's lookup (nb_path_segment) is a binary search */
    if (status == 0 && t->links > 1)
        qsort(t->link_keys, t->links, sizeof *t->link_keys, by_key);
    if (status == 0 && t->hosts == 0) {
        snprintf(why, why_size, "no host line (a line: the host, then its switches from its "
                 "leaf up)");
        status = -1;
    }
    if (status != 0)
        nb_path_table_free(t);
    return status;
}

void nb_path_table_free(nb_path_table *t)
{
    for (size_t i = 0; i < t->hosts; i++)
        free(t->host[i]);
    for (size_t i = 0; i < t->switches; i++)
        free(t->switch_name[i]);
    free(t->host);
    free(t->levels);
    free(t->chain);
    free(t->switch_name);
    free(t->link_keys);
    memset(t, 0, sizeof *t);
}

long nb_path_table_host(const nb_path_table *t, const char *host)
{
    for (size_t i = 0; i < t->hosts; i++)
        if (strcmp(t->host[i], host) == 0)
            return (long)i;
    return -1;
}

int nb_path_class(const int *a, int na, const int *b, int nb)
{
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a[i] == b[j])
                return i + j;
    return na + nb;
}

long nb_path_segment(const nb_path_table *t, const int *a, int na, const int *b, int nb)
{
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a[i] == b[j]) {
                if (i == 0 || j == 0 || t->links == 0)
                    return -1;
                long key = link_key(a[i - 1], b[j - 1]);
                return bsearch(&key, t->link_keys, t->links, sizeof key, by_key) ? key : -1;
            }
    return -1;
}
