/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf_json.h: typed look-ups in the JSON the tools read back (topology captures, tune
 * results, cluster files): a member of the wrong type reads as absent, so that no json-c
 * call is ever made on a value of another type (json-c asserts on an array call given an
 * object, and a file from outside may hold anything).
 */
#ifndef SHARC_PERF_JSON_H
#define SHARC_PERF_JSON_H

#include <json.h>

/* Member @p key of object @p o as a string ("" when absent, null, or @p o is no object). */
static inline const char *perf_jstr(json_object *o, const char *key)
{
    json_object *v;
    const char *s;

    if (o == NULL || !json_object_object_get_ex(o, key, &v) || v == NULL) {
        return "";
    }
    s = json_object_get_string(v);
    return s != NULL ? s : "";
}

/* Member @p key of @p o as a number (@p dflt when absent). */
static inline double perf_jnum(json_object *o, const char *key, double dflt)
{
    json_object *v;

    return (o != NULL && json_object_object_get_ex(o, key, &v)) ? json_object_get_double(v) : dflt;
}

/* Member @p key of @p o as an int (json-c saturates; 0 when absent): never a cast of a
 * double past int's range. */
static inline int perf_jint(json_object *o, const char *key)
{
    json_object *v;

    return (o != NULL && json_object_object_get_ex(o, key, &v)) ? json_object_get_int(v) : 0;
}

/* Member @p key of @p o when it is an array, else NULL. */
static inline json_object *perf_jarr(json_object *o, const char *key)
{
    json_object *v;

    return (o != NULL && json_object_object_get_ex(o, key, &v) &&
            json_object_is_type(v, json_type_array))
               ? v
               : NULL;
}

/* Element @p i of array @p a (NULL when @p a is NULL or shorter). */
static inline json_object *perf_jidx(json_object *a, size_t i)
{
    return (a != NULL && i < json_object_array_length(a)) ? json_object_array_get_idx(a, i) : NULL;
}

/* Length of array @p a, 0 for NULL. */
static inline size_t perf_jlen(json_object *a)
{
    return a != NULL ? json_object_array_length(a) : 0;
}

#endif
