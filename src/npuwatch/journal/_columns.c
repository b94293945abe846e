/*
 * The columns of a journal block, in one pass over its records: what `columns_python` in
 * journal/block_columns.py computes with a dozen Python passes. That function is the contract
 * and the reference; tests compare the two on arbitrary batches, value for value.
 *
 * It exists because encoding blocks was the largest share of the agent's CPU on a DEBUG flood
 * (each Python pass over a batch costs 25-80 ns a record, and there were fifteen of them).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "limited_api.h"
#include <stdint.h>
#include <string.h>

#define NONE_VALUE INT64_MIN /* journal/block.py's _NONE: stands for None in integer columns */

static PyObject *a_timestamp_us, *a_level, *a_logger, *a_pid, *a_error_codes, *a_flags,
    *a_offset, *a_end_offset, *a_original;

#define VALUE_OUT_OF_RANGE_FLAG 256 /* records.py's Flag.VALUE_OUT_OF_RANGE */

/* `value` (an int or None) as a column's integer; -1 with an exception set (a value that is no
 * int). An int beyond 64 bits, or the one that stands for None, is stored as None and counted in
 * `*clipped`: one value costs its column, never the block. */
static int as_column_int(PyObject *value, int64_t *out, int *clipped) {
    if (value == Py_None) {
        *out = NONE_VALUE;
        return 0;
    }
    long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        number = NONE_VALUE;
        *clipped = 1;
    } else if (number == NONE_VALUE) {
        *clipped = 1;
    }
    *out = (int64_t)number;
    return 0;
}

/* A record's attribute as a column's integer (a new reference is dropped here). */
static int attribute_int(PyObject *record, PyObject *name, int64_t *out, int *clipped) {
    PyObject *value = PyObject_GetAttr(record, name);
    if (value == NULL) return -1;
    int result = as_column_int(value, out, clipped);
    Py_DECREF(value);
    return result;
}

/* The index of `name` among `names` (first seen first), adding it when new; -1 on error. */
static Py_ssize_t name_index(PyObject *ids, PyObject *names, PyObject *name) {
    PyObject *found = PyDict_GetItemWithError(ids, name);
    if (found != NULL) return PyLong_AsSsize_t(found);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t index = PyList_GET_SIZE(names);
    PyObject *number = PyLong_FromSsize_t(index);
    if (number == NULL) return -1;
    int failed = PyDict_SetItem(ids, name, number) < 0 || PyList_Append(names, name) < 0;
    Py_DECREF(number);
    return failed ? -1 : index;
}

static PyObject *new_pair(Py_ssize_t position, PyObject *value) {
    PyObject *index = PyLong_FromSsize_t(position);
    if (index == NULL) return NULL;
    PyObject *pair = PyList_New(2);
    if (pair == NULL) {
        Py_DECREF(index);
        return NULL;
    }
    Py_INCREF(value);
    PyList_SET_ITEM(pair, 0, index);
    PyList_SET_ITEM(pair, 1, value);
    return pair;
}

static int append_pair(PyObject *list, Py_ssize_t position, PyObject *value) {
    PyObject *pair = new_pair(position, value);
    if (pair == NULL) return -1;
    int result = PyList_Append(list, pair);
    Py_DECREF(pair);
    return result;
}

static int append_index(PyObject *list, Py_ssize_t position) {
    PyObject *index = PyLong_FromSsize_t(position);
    if (index == NULL) return -1;
    int result = PyList_Append(list, index);
    Py_DECREF(index);
    return result;
}

static PyObject *int64_bytes(const int64_t *values, Py_ssize_t count) {
    return PyBytes_FromStringAndSize((const char *)values, count * (Py_ssize_t)sizeof(int64_t));
}

static PyObject *index_bytes(const uint32_t *ids, const uint32_t *translate, Py_ssize_t count,
                             int wide) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (wide ? 2 : 1));
    if (out == NULL) return NULL;
    char *bytes = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t value = translate == NULL ? ids[i] : translate[ids[i]];
        if (wide) {
            uint16_t narrow = (uint16_t)value;
            memcpy(bytes + 2 * i, &narrow, 2);
        } else {
            bytes[i] = (char)value;
        }
    }
    return out;
}

/* {(level, module): records} in the order each pair is first seen, from the per-record ids. */
static PyObject *pair_counts(const uint32_t *level_of, const uint32_t *logger_of, Py_ssize_t count,
                             PyObject *level_names, PyObject *logger_names) {
    Py_ssize_t levels = PyList_GET_SIZE(level_names), loggers = PyList_GET_SIZE(logger_names);
    PyObject *pairs = PyDict_New();
    if (pairs == NULL || count == 0) return pairs;
    size_t cells = (size_t)levels * (size_t)loggers;
    Py_ssize_t *counts = cells <= ((size_t)1 << 22) ? PyMem_Calloc(cells, sizeof(Py_ssize_t)) : NULL;
    Py_ssize_t *order = counts != NULL ? PyMem_Malloc(cells * sizeof(Py_ssize_t)) : NULL;
    if (counts == NULL || order == NULL) { /* a batch of thousands of levels: count in a dict */
        PyMem_Free(counts);
        PyMem_Free(order);
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *key = PyTuple_Pack(2, PyList_GET_ITEM(level_names, level_of[i]),
                                         PyList_GET_ITEM(logger_names, logger_of[i]));
            if (key == NULL) goto fail;
            PyObject *seen = PyDict_GetItemWithError(pairs, key);
            PyObject *next = seen != NULL     ? PyLong_FromSsize_t(PyLong_AsSsize_t(seen) + 1)
                             : PyErr_Occurred() ? NULL
                                                : PyLong_FromSsize_t(1);
            int failed = next == NULL || PyDict_SetItem(pairs, key, next) < 0;
            Py_XDECREF(next);
            Py_DECREF(key);
            if (failed) goto fail;
        }
        return pairs;
    }
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        size_t cell = (size_t)level_of[i] * (size_t)loggers + logger_of[i];
        if (counts[cell]++ == 0) order[distinct++] = (Py_ssize_t)cell;
    }
    for (Py_ssize_t k = 0; k < distinct; k++) {
        Py_ssize_t cell = order[k];
        PyObject *key = PyTuple_Pack(2, PyList_GET_ITEM(level_names, cell / loggers),
                                     PyList_GET_ITEM(logger_names, cell % loggers));
        PyObject *value = key != NULL ? PyLong_FromSsize_t(counts[cell]) : NULL;
        int failed = value == NULL || PyDict_SetItem(pairs, key, value) < 0;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            PyMem_Free(counts);
            PyMem_Free(order);
            goto fail;
        }
    }
    PyMem_Free(counts);
    PyMem_Free(order);
    return pairs;
fail:
    Py_DECREF(pairs);
    return NULL;
}

/* block_columns(records, notable_levels, exported_flags) -> tuple; see columns_python. */
static PyObject *block_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "block_columns takes records, levels and a flag mask");
        return NULL;
    }
    PyObject *records = PySequence_Fast(args[0], "records must be a sequence");
    if (records == NULL) return NULL;
    PyObject *notable_levels = args[1];
    long long exported = PyLong_AsLongLong(args[2]);
    if (exported == -1 && PyErr_Occurred()) {
        Py_DECREF(records);
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(records);
    PyObject *result = NULL, *level_ids = NULL, *level_names = NULL, *logger_ids = NULL,
             *logger_names = NULL, *pids = NULL, *flags = NULL, *codes = NULL,
             *originals = NULL, *notable = NULL, *names = NULL;
    /* Consecutive records nearly always share their level and module objects. */
    PyObject *last_level = NULL, *last_logger = NULL;
    size_t cells = (size_t)(count > 0 ? count : 1);
    int64_t *times = PyMem_Malloc(cells * sizeof(int64_t));
    int64_t *offsets = PyMem_Malloc(cells * sizeof(int64_t));
    int64_t *ends = PyMem_Malloc(cells * sizeof(int64_t));
    int64_t *pid_values = PyMem_Malloc(cells * sizeof(int64_t));
    uint32_t *lengths = PyMem_Malloc(cells * sizeof(uint32_t));
    uint32_t *level_of = PyMem_Malloc(cells * sizeof(uint32_t));
    uint32_t *logger_of = PyMem_Malloc(cells * sizeof(uint32_t));
    uint32_t *translate = NULL;
    if (!times || !offsets || !ends || !pid_values || !lengths || !level_of || !logger_of) {
        PyErr_NoMemory();
        goto done;
    }
    level_ids = PyDict_New();
    level_names = PyList_New(0);
    logger_ids = PyDict_New();
    logger_names = PyList_New(0);
    pids = PySet_New(NULL);
    flags = PyList_New(0);
    codes = PyList_New(0);
    originals = PyList_New(count);
    notable = PyList_New(0);
    if (!level_ids || !level_names || !logger_ids || !logger_names || !pids || !flags ||
        !codes || !originals || !notable)
        goto done;

    int64_t low = 0, high = 0;
    int dated = 0;
    Py_ssize_t last_level_id = 0, last_logger_id = 0;
    int last_level_notable = 0;
    int64_t last_pid = NONE_VALUE;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = PySequence_Fast_GET_ITEM(records, i);
        int clipped = 0;
        if (attribute_int(record, a_timestamp_us, &times[i], &clipped) < 0) goto done;
        if (times[i] != NONE_VALUE) {
            if (!dated || times[i] < low) low = times[i];
            if (!dated || times[i] > high) high = times[i];
            dated = 1;
        }
        if (attribute_int(record, a_offset, &offsets[i], &clipped) < 0) goto done;
        if (attribute_int(record, a_end_offset, &ends[i], &clipped) < 0) goto done;

        PyObject *pid = PyObject_GetAttr(record, a_pid);
        if (pid == NULL) goto done;
        int pid_clipped = 0;
        int failed = as_column_int(pid, &pid_values[i], &pid_clipped) < 0;
        clipped |= pid_clipped;
        if (!failed && pid != Py_None && !pid_clipped && (pid_values[i] != last_pid || i == 0)) {
            failed = PySet_Add(pids, pid) < 0;
            last_pid = pid_values[i];
        }
        Py_DECREF(pid);
        if (failed) goto done;

        PyObject *level = PyObject_GetAttr(record, a_level);
        if (level == NULL) goto done;
        if (level != last_level) {
            last_level_id = name_index(level_ids, level_names, level);
            last_level_notable =
                last_level_id < 0 ? -1 : PySequence_Contains(notable_levels, level);
            Py_XSETREF(last_level, level); /* held: compared by identity with the next */
        } else {
            Py_DECREF(level);
        }
        if (last_level_id < 0 || last_level_notable < 0) goto done;
        level_of[i] = (uint32_t)last_level_id;

        PyObject *logger = PyObject_GetAttr(record, a_logger);
        if (logger == NULL) goto done;
        if (logger != last_logger) {
            last_logger_id = name_index(logger_ids, logger_names, logger);
            Py_XSETREF(last_logger, logger);
        } else {
            Py_DECREF(logger);
        }
        if (last_logger_id < 0) goto done;
        logger_of[i] = (uint32_t)last_logger_id;

        PyObject *record_codes = PyObject_GetAttr(record, a_error_codes);
        if (record_codes == NULL) goto done;
        int has_codes = PyList_CheckExact(record_codes) ? PyList_GET_SIZE(record_codes) > 0
                                                        : PyObject_IsTrue(record_codes);
        if (has_codes > 0) failed = append_pair(codes, i, record_codes) < 0;
        Py_DECREF(record_codes);
        if (has_codes < 0 || failed) goto done;
        if ((last_level_notable || has_codes) && append_index(notable, i) < 0) goto done;

        PyObject *record_flags = PyObject_GetAttr(record, a_flags);
        if (record_flags == NULL) goto done;
        /* The low bits of any int, as Python's `flags & exported` takes them. */
        unsigned long long flag_value = PyLong_AsUnsignedLongLongMask(record_flags);
        Py_DECREF(record_flags);
        if (flag_value == (unsigned long long)-1 && PyErr_Occurred()) goto done;
        if (clipped) flag_value |= VALUE_OUT_OF_RANGE_FLAG;
        if (flag_value & (unsigned long long)exported) {
            PyObject *kept = PyLong_FromUnsignedLongLong(flag_value & (unsigned long long)exported);
            if (kept == NULL) goto done;
            failed = append_pair(flags, i, kept) < 0;
            Py_DECREF(kept);
            if (failed) goto done;
        }

        PyObject *original = PyObject_GetAttr(record, a_original);
        if (original == NULL) goto done;
        if (!PyUnicode_Check(original)) {
            PyErr_Format(PyExc_TypeError, "record %zd: original is %R, not str", i,
                         (PyObject *)Py_TYPE(original));
            Py_DECREF(original);
            goto done;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(original);
        if ((uint64_t)length > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "a record's text is longer than 4 GiB");
            Py_DECREF(original);
            goto done;
        }
        lengths[i] = (uint32_t)length;
        PyList_SET_ITEM(originals, i, original); /* steals the reference */
    }

    /* The dictionary: the levels first seen first, then the modules that are not levels. */
    names = PyList_GetSlice(level_names, 0, PyList_GET_SIZE(level_names));
    if (names == NULL) goto done;
    Py_ssize_t loggers = PyList_GET_SIZE(logger_names);
    translate = PyMem_Malloc((size_t)(loggers > 0 ? loggers : 1) * sizeof(uint32_t));
    if (translate == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < loggers; j++) {
        PyObject *name = PyList_GET_ITEM(logger_names, j);
        PyObject *found = PyDict_GetItemWithError(level_ids, name);
        if (found != NULL) {
            translate[j] = (uint32_t)PyLong_AsSsize_t(found);
        } else if (PyErr_Occurred() || PyList_Append(names, name) < 0) {
            goto done;
        } else {
            translate[j] = (uint32_t)(PyList_GET_SIZE(names) - 1);
        }
    }
    Py_ssize_t distinct = PyList_GET_SIZE(names);
    if (distinct > 65536) {
        PyErr_SetString(PyExc_OverflowError, "more than 65,536 level and module names a block");
        goto done;
    }
    int wide = distinct > 256;
    PyObject *values[] = {
        int64_bytes(times, count),
        int64_bytes(offsets, count),
        int64_bytes(ends, count),
        int64_bytes(pid_values, count),
        PyBytes_FromStringAndSize((const char *)lengths, count * (Py_ssize_t)sizeof(uint32_t)),
        Py_NewRef(names),
        index_bytes(level_of, NULL, count, wide),
        PyUnicode_FromString(wide ? "H" : "B"),
        index_bytes(logger_of, translate, count, wide),
        Py_NewRef(pids),
        Py_NewRef(level_names),
        Py_NewRef(logger_names),
        Py_NewRef(flags),
        Py_NewRef(codes),
        Py_NewRef(originals),
        Py_NewRef(notable),
        dated ? PyLong_FromLongLong(low) : Py_NewRef(Py_None),
        dated ? PyLong_FromLongLong(high) : Py_NewRef(Py_None),
        pair_counts(level_of, logger_of, count, level_names, logger_names),
    };
    Py_ssize_t fields = (Py_ssize_t)(sizeof(values) / sizeof(values[0]));
    result = PyTuple_New(fields);
    for (Py_ssize_t k = 0; k < fields; k++) {
        if (values[k] == NULL || result == NULL) {
            Py_CLEAR(result);
            Py_XDECREF(values[k]);
        } else {
            PyTuple_SET_ITEM(result, k, values[k]);
        }
    }

done:
    PyMem_Free(times);
    PyMem_Free(offsets);
    PyMem_Free(ends);
    PyMem_Free(pid_values);
    PyMem_Free(lengths);
    PyMem_Free(level_of);
    PyMem_Free(logger_of);
    PyMem_Free(translate);
    Py_XDECREF(level_ids);
    Py_XDECREF(level_names);
    Py_XDECREF(logger_ids);
    Py_XDECREF(logger_names);
    Py_XDECREF(pids);
    Py_XDECREF(flags);
    Py_XDECREF(codes);
    Py_XDECREF(originals);
    Py_XDECREF(notable);
    Py_XDECREF(names);
    Py_XDECREF(last_level);
    Py_XDECREF(last_logger);
    Py_DECREF(records);
    return result;
}

/* text_starts(lengths) -> bytes: where each record's text starts in a block's joined text, and
 * one past the end, as 64-bit integers, from the records' lengths (32-bit, as stored). */
static PyObject *text_starts(PyObject *module, PyObject *lengths) {
    Py_buffer view;
    if (PyObject_GetBuffer(lengths, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len % (Py_ssize_t)sizeof(uint32_t) != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "lengths must be 32-bit integers");
        return NULL;
    }
    Py_ssize_t count = view.len / (Py_ssize_t)sizeof(uint32_t);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (count + 1) * (Py_ssize_t)sizeof(int64_t));
    if (out != NULL) {
        const char *in = view.buf;
        char *starts = PyBytes_AS_STRING(out);
        int64_t at = 0;
        memcpy(starts, &at, sizeof at);
        for (Py_ssize_t i = 0; i < count; i++) {
            uint32_t length;
            memcpy(&length, in + i * (Py_ssize_t)sizeof length, sizeof length);
            at += (int64_t)length + 1; /* the newline that joins it to the next */
            memcpy(starts + (i + 1) * (Py_ssize_t)sizeof at, &at, sizeof at);
        }
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"block_columns", (PyCFunction)(void (*)(void))block_columns, METH_FASTCALL,
     "The columns of a journal block (see npuwatch.journal.block_columns)."},
    {"text_starts", (PyCFunction)text_starts, METH_O,
     "Where each record's text starts (see npuwatch.journal.block_columns)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_columns", "C implementation of a journal block's columns.", -1,
    methods, NULL, NULL, NULL, NULL,
};

#define INTERN(target, text)                       \
    do {                                           \
        target = PyUnicode_InternFromString(text); \
        if (target == NULL) return NULL;           \
    } while (0)

PyMODINIT_FUNC PyInit__columns(void) {
    INTERN(a_timestamp_us, "timestamp_us");
    INTERN(a_level, "level");
    INTERN(a_logger, "logger");
    INTERN(a_pid, "pid");
    INTERN(a_error_codes, "error_codes");
    INTERN(a_flags, "flags");
    INTERN(a_offset, "offset");
    INTERN(a_end_offset, "end_offset");
    INTERN(a_original, "original");
    return PyModule_Create(&module_definition);
}
