/* json_read.c - a minimal JSON reader for netbench's own result files (json_read.h). */
#include "json_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *at;
    int depth;
} json_reader;

void nb_json_free(nb_json_value *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->count; i++) {
        nb_json_free(v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

static void json_skip_space(json_reader *r)
{
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')
        r->at++;
}

static char *json_parse_string(json_reader *r)
{
    if (*r->at != '"')
        return NULL;
    r->at++;
    size_t capacity = 64, used = 0;
    char *text = malloc(capacity);
    while (text != NULL && *r->at != '"') {
        char c = *r->at++;
        if (c == '\0') {
            free(text);
            return NULL;
        }
        if (c == '\\') {
            char e = *r->at++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b'
              : e == 'f' ? '\f' : e;
            if (e == 'u') { /* non-ASCII is not needed here: keep a placeholder */
                for (int k = 0; k < 4; k++)
                    if (*r->at != '\0')
                        r->at++;
                c = '?';
            } else if (e == '\0') {
                free(text);
                return NULL;
            }
        }
        if (used + 2 > capacity) {
            char *bigger = realloc(text, capacity *= 2);
            if (bigger == NULL)
                free(text);
            text = bigger;
            if (text == NULL)
                return NULL;
        }
        text[used++] = c;
    }
    if (text == NULL)
        return NULL;
    text[used] = '\0';
    r->at++;
    return text;
}

static nb_json_value *json_parse_value(json_reader *r);

static int json_append(nb_json_value *v, char *key, nb_json_value *item)
{
    nb_json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (items == NULL)
        return -1;
    v->items = items;
    if (v->type == NB_JSON_OBJECT) {
        char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (keys == NULL)
            return -1;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 0;
}

static nb_json_value *json_parse_container(json_reader *r, nb_json_value *v)
{
    char close = v->type == NB_JSON_OBJECT ? '}' : ']';
    r->at++;
    json_skip_space(r);
    if (*r->at == close) {
        r->at++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        json_skip_space(r);
        if (v->type == NB_JSON_OBJECT) {
            key = json_parse_string(r);
            json_skip_space(r);
            if (key == NULL || *r->at != ':') {
                free(key);
                nb_json_free(v);
                return NULL;
            }
            r->at++;
        }
        nb_json_value *item = json_parse_value(r);
        if (item == NULL || json_append(v, key, item) != 0) {
            free(key);
            nb_json_free(item);
            nb_json_free(v);
            return NULL;
        }
        json_skip_space(r);
        if (*r->at == ',') {
            r->at++;
            continue;
        }
        if (*r->at == close) {
            r->at++;
            return v;
        }
        nb_json_free(v);
        return NULL;
    }
}

static nb_json_value *json_parse_value(json_reader *r)
{
    json_skip_space(r);
    if (r->depth > 64)
        return NULL;
    nb_json_value *v = calloc(1, sizeof *v);
    if (v == NULL)
        return NULL;
    char c = *r->at;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? NB_JSON_OBJECT : NB_JSON_ARRAY;
        r->depth++;
        v = json_parse_container(r, v);
        r->depth--;
        return v;
    }
    if (c == '"') {
        v->type = NB_JSON_STRING;
        v->string = json_parse_string(r);
        if (v->string == NULL) {
            free(v);
            return NULL;
        }
        return v;
    }
    if (strncmp(r->at, "null", 4) == 0) {
        r->at += 4;
        return v;
    }
    if (strncmp(r->at, "true", 4) == 0 || strncmp(r->at, "false", 5) == 0) {
        v->type = NB_JSON_BOOL;
        v->number = c == 't';
        r->at += c == 't' ? 4 : 5;
        return v;
    }
    char *end = NULL;
    v->number = strtod(r->at, &end);
    if (end == r->at) {
        free(v);
        return NULL;
    }
    v->type = NB_JSON_NUMBER;
    r->at = end;
    return v;
}

const nb_json_value *nb_json_get(const nb_json_value *v, const char *key)
{
    if (v == NULL || v->type != NB_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

char *nb_read_whole_file(const char *path, const char **why)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        *why = "cannot be opened";
        return NULL;
    }
    size_t capacity = 1 << 16, used = 0;
    char *text = malloc(capacity);
    while (text != NULL) {
        used += fread(text + used, 1, capacity - used - 1, file);
        if (used < capacity - 1 || capacity > (1u << 28))
            break;
        char *bigger = realloc(text, capacity *= 2);
        if (bigger == NULL)
            free(text);
        text = bigger;
    }
    int failed = ferror(file);
    fclose(file);
    if (text == NULL || failed) {
        free(text);
        *why = text == NULL ? "is too large to read" : "cannot be read";
        return NULL;
    }
    text[used] = '\0';
    return text;
}


nb_json_value *nb_json_parse(const char *text)
{
    json_reader reader = {.at = text};
    return json_parse_value(&reader);
}
