/* json_read.h - a minimal JSON reader for netbench's own result files (render.c writes them):
 * `models --loggp-json` reads a loggp result with it. Numbers are doubles; depth is limited.
 */
#ifndef NETBENCH_JSON_READ_H
#define NETBENCH_JSON_READ_H

#include <stddef.h>

typedef enum {
    NB_JSON_NULL,
    NB_JSON_BOOL,
    NB_JSON_NUMBER,
    NB_JSON_STRING,
    NB_JSON_ARRAY,
    NB_JSON_OBJECT,
} nb_json_type;

typedef struct nb_json_value {
    nb_json_type type;
    double number;
    char *string;
    char **keys;               /* objects */
    struct nb_json_value **items;  /* arrays and objects */
    size_t count;
} nb_json_value;

/* The value of `text`, or NULL when it is no JSON (or nests too deep); free with nb_json_free. */
nb_json_value *nb_json_parse(const char *text);
void nb_json_free(nb_json_value *v);
/* An object's member `key`, or NULL (also when v is NULL or no object). */
const nb_json_value *nb_json_get(const nb_json_value *v, const char *key);
/* The whole file as a string, or NULL with *why ("cannot be opened", ...) for a message. */
char *nb_read_whole_file(const char *path, const char **why);

#endif
