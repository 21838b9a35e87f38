/* matrix_maps.c - the map's files beside its JSON result (two CSV maps and matrix_maps.json)
 * and `matrix --print-schedule`, the tournament's rounds without MPI (matrix.c measures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix_record.h"
#include "output.h"
#include "pairmap.h"

/* The path of NAME in the directory of the JSON result. */
static void path_beside(const char *json_file, const char *name, char *path, size_t length)
{
    const char *slash = strrchr(json_file, '/');
    int directory = slash == NULL ? 0 : (int)(slash - json_file + 1);
    snprintf(path, length, "%.*s%s", directory, json_file, name);
}

/* The N x N maps beside the JSON result: two CSV files (rows and columns are ranks, headed
 * "rank:host"; empty: the diagonal and pairs not measured) and one JSON file with both maps,
 * the rounds and the verdict. Returns 0 or -1. */
int matrix_write_maps(const char *json_file, const char *schedule, const matrix_record *m,
                      const char *hosts)
{
    char path[4096], *temporary;
    int P = m->P, failed = 0;
    static const char *const names[2] = {"matrix_bandwidth_MBps.csv", "matrix_latency_us.csv"};
    for (int map = 0; map < 2; map++) {
        const double *values = map == 0 ? m->bandwidth : m->latency;
        path_beside(json_file, names[map], path, sizeof path);
        FILE *out = nb_create_atomically(path, &temporary);
        if (out == NULL) {
            failed = -1;
            continue;
        }
        fputs("rank/host", out);
        for (int c = 0; c < P; c++)
            fprintf(out, ",%d:%s", c, host_of(hosts, c));
        fputc('\n', out);
        for (int r = 0; r < P; r++) {
            fprintf(out, "%d:%s", r, host_of(hosts, r));
            for (int c = 0; c < P; c++) {
                fputc(',', out);
                if (r != c)
                    nb_write_real(out, values[pair_index(P, r < c ? r : c, r < c ? c : r)], "");
            }
            fputc('\n', out);
        }
        failed |= nb_finish_atomically(out, path, temporary);
    }
    path_beside(json_file, "matrix_maps.json", path, sizeof path);
    FILE *out = nb_create_atomically(path, &temporary);
    if (out == NULL)
        return -1;
    fprintf(out, "{\n  \"format\": \"netbench-matrix-maps\",\n  \"version\": 1,\n"
                 "  \"ranks\": %d,\n  \"schedule\": \"%s\",\n  \"hosts\": [", P,
            schedule);
    for (int r = 0; r < P; r++) {
        fputs(r ? ", " : "", out);
        nb_json_string(host_of(hosts, r), out);
    }
    fputs("]", out);
    static const char *const keys[] = {"bandwidth_MBps", "latency_us", "round", "suspect", "bad"};
    for (size_t key = 0; key < sizeof keys / sizeof keys[0]; key++) {
        fprintf(out, ",\n  \"%s\": [", keys[key]);
        for (int r = 0; r < P; r++) {
            fputs(r ? ",\n    [" : "\n    [", out);
            for (int c = 0; c < P; c++) {
                fputs(c ? ", " : "", out);
                if (r == c) {
                    fputs("null", out);
                    continue;
                }
                size_t k = pair_index(P, r < c ? r : c, r < c ? c : r);
                if (key == 0 || key == 1)
                    nb_write_real(out, key == 0 ? m->bandwidth[k] : m->latency[k], "null");
                else if (m->round[k] == 0)
                    fputs("null", out);
                else if (key == 2)
                    fprintf(out, "%d", m->round[k]);
                else
                    fputs((key == 3 ? m->suspect[k] : m->bad[k]) ? "true" : "false", out);
            }
            fputc(']', out);
        }
        fputs("\n  ]", out);
    }
    fputs("\n}\n", out);
    return failed | nb_finish_atomically(out, path, temporary);
}

int matrix_print_schedule(int P, int rounds, long seed, int json)
{
    int total = nb_tournament_rounds(P);
    int *chosen = malloc((size_t)total * sizeof *chosen);
    if (chosen == NULL) {
        fprintf(stderr, "netbench: out of memory\n");
        return 1;
    }
    int count = nb_tournament_pick_rounds(P, rounds > 0 ? rounds : total, seed, chosen);
    if (json)
        printf("{\"ranks\": %d, \"rounds_total\": %d, \"seed\": %ld, \"rounds\": [", P, total,
               seed);
    else
        printf("# schedule: %d ranks, %d of %d rounds%s\n", P, count, total,
               count < total ? " (--rounds, drawn with --seed)" : " (the full map)");
    for (int i = 0; i < count; i++) {
        int bye = -1;
        if (json)
            printf("%s\n  {\"round\": %d, \"pairs\": [", i ? "," : "", chosen[i] + 1);
        else
            printf("round %d:", chosen[i] + 1);
        int first = 1;
        for (int a = 0; a < P; a++) {
            int b = nb_tournament_partner(P, chosen[i], a);
            if (b < 0)
                bye = a;
            if (b <= a)
                continue;
            printf(json ? "%s[%d, %d]" : "%s%d-%d", json
                   ? (first ? "" : ", ") : " ", a, b);
            first = 0;
        }
        if (json) {
            printf("], \"bye\": ");
            printf(bye < 0 ? "null}" : "%d}", bye);
        } else {
            printf(bye < 0 ? "\n" : " (bye %d)\n", bye);
        }
    }
    if (json)
        printf("\n]}\n");
    free(chosen);
    return fflush(stdout) == 0 ? 0 : 1;
}
