/*
 * The first pass of the npuwatch parser in C: split a chunk into lines and turn every line that
 * starts with the strict CANN header into a record. The contract, and the Python reference this
 * must match item for item, are in first_pass.py; tests compare the two on arbitrary input.
 *
 * It exists because the first pass runs once per line of a plog and the interpreter on a busy
 * NPU host has better things to do: this keeps the agent able to follow a DEBUG flood on one core.
 * Everything beyond the strict header (anomalies, console blocks, other formats, multi-line
 * assembly) stays in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "limited_api.h"
#include <string.h>

typedef struct {
    PyObject *level_names[8];
    PyObject *slog;
    PyObject *empty_tuple;
    /* attribute names */
    PyObject *a_original, *a_format, *a_level, *a_logger, *a_pid, *a_process_name,
        *a_timestamp_us, *a_body, *a_offset, *a_end_offset, *a_source, *a_flags,
        *a_error_codes;
} module_state;

static module_state state;

static const char *LEVELS[8] = {"DEBUG", "INFO", "WARNING", "ERROR", "EVENT", "TRACE", "OPLOG", "NULL"};
static const Py_ssize_t LEVEL_LENGTHS[8] = {5, 4, 7, 5, 5, 5, 5, 4};
#define PRE_CLOCK_SYNC_FLAG 4
#define VALUE_OUT_OF_RANGE_FLAG 256
#define HAS_CODES_FLAG (1 << 16)
/* Any number of up to 18 characters (sign included) fits 64 bits: see bounded_numbers.py. */
#define SAFE_DIGITS 18

/* A tiny cache of strings seen in this chunk (module and process names repeat on every line). */
#define CACHE_SLOTS 16
typedef struct {
    char text[48];
    Py_ssize_t length;
    PyObject *value; /* borrowed from the item list's records; kept alive by cache_clear */
} cache_entry;

typedef struct {
    cache_entry entries[CACHE_SLOTS];
    int next;
} string_cache;

static void cache_clear(string_cache *cache) {
    for (int i = 0; i < CACHE_SLOTS; i++) {
        Py_CLEAR(cache->entries[i].value);
        cache->entries[i].length = -1;
    }
    cache->next = 0;
}

/* A new reference to the str for `bytes` (valid UTF-8), shared when it was seen recently. */
static PyObject *cached_string(string_cache *cache, const char *bytes, Py_ssize_t length) {
    if (length <= (Py_ssize_t)sizeof(cache->entries[0].text)) {
        for (int i = 0; i < CACHE_SLOTS; i++) {
            cache_entry *entry = &cache->entries[i];
            if (entry->length == length && memcmp(entry->text, bytes, (size_t)length) == 0) {
                Py_INCREF(entry->value);
                return entry->value;
            }
        }
    }
    PyObject *value = PyUnicode_DecodeUTF8(bytes, length, NULL);
    if (value == NULL) {
        return NULL;
    }
    if (length <= (Py_ssize_t)sizeof(cache->entries[0].text)) {
        cache_entry *entry = &cache->entries[cache->next];
        cache->next = (cache->next + 1) % CACHE_SLOTS;
        Py_XDECREF(entry->value);
        memcpy(entry->text, bytes, (size_t)length);
        entry->length = length;
        Py_INCREF(value);
        entry->value = value;
    }
    return value;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_word(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int digits_at(const char *p, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!is_digit(p[i])) {
            return 0;
        }
    }
    return 1;
}

static long long digits_value(const char *p, Py_ssize_t count) {
    long long value = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        value = value * 10 + (p[i] - '0');
    }
    return value;
}

/* Whether the decimal text `p` (an optional '-', then digits) fits a signed 64-bit value other
 * than the smallest (which the journal keeps for None); on success `*out` holds it. */
static int fitting_value(const char *p, Py_ssize_t count, long long *out) {
    int negative = count > 0 && *p == '-';
    Py_ssize_t i = negative;
    while (i < count && p[i] == '0') {
        i++;
    }
    Py_ssize_t significant = count - i;
    static const char LARGEST[] = "9223372036854775807";
    if (significant > 19 || (significant == 19 && memcmp(p + i, LARGEST, 19) > 0)) {
        return 0;
    }
    long long value = 0;
    for (; i < count; i++) {
        value = value * 10 + (p[i] - '0');
    }
    *out = negative ? -value : value;
    return 1;
}

/* The strict header. On a match fills the spans and returns the length of the header (with the
 * optional space after it); returns -1 when the line does not start with one. */
typedef struct {
    int level;
    Py_ssize_t module_start, module_end, pid_start, pid_end, pname_start, pname_end, time_start;
} header_spans;

static Py_ssize_t match_header(const char *s, Py_ssize_t n, header_spans *h) {
    Py_ssize_t i = 0;
    if (n < 1 || s[0] != '[') {
        return -1;
    }
    i = 1;
    h->level = -1;
    for (int k = 0; k < 8; k++) {
        Py_ssize_t len = LEVEL_LENGTHS[k];
        if (i + len + 2 <= n && memcmp(s + i, LEVELS[k], (size_t)len) == 0 && s[i + len] == ']' &&
            s[i + len + 1] == ' ') {
            h->level = k;
            i += len + 2;
            break;
        }
    }
    if (h->level < 0) {
        return -1;
    }
    h->module_start = i;
    if (i >= n || !is_upper(s[i])) {
        return -1;
    }
    i++;
    while (i < n && (is_upper(s[i]) || is_digit(s[i]) || s[i] == '_')) {
        i++;
    }
    h->module_end = i;
    if (i >= n || s[i] != '(') {
        return -1;
    }
    i++;
    h->pid_start = i;
    if (i < n && s[i] == '-') {
        i++;
    }
    Py_ssize_t digits_start = i;
    while (i < n && is_digit(s[i])) {
        i++;
    }
    if (i == digits_start) {
        return -1;
    }
    h->pid_end = i;
    if (i >= n || s[i] != ',') {
        return -1;
    }
    i++;
    h->pname_start = i;
    while (i < n && s[i] != ')' && s[i] != ',') {
        i++;
    }
    h->pname_end = i;
    if (i + 2 > n || s[i] != ')' || s[i + 1] != ':') {
        return -1;
    }
    i += 2;
    /* YYYY-MM-DD-HH:MM:SS.mmm.uuu */
    if (i + 27 > n) {
        return -1;
    }
    const char *t = s + i;
    if (!(digits_at(t, 4) && t[4] == '-' && digits_at(t + 5, 2) && t[7] == '-' &&
          digits_at(t + 8, 2) && t[10] == '-' && digits_at(t + 11, 2) && t[13] == ':' &&
          digits_at(t + 14, 2) && t[16] == ':' && digits_at(t + 17, 2) && t[19] == '.' &&
          digits_at(t + 20, 3) && t[23] == '.' && digits_at(t + 24, 3))) {
        return -1;
    }
    h->time_start = i;
    i += 27;
    if (i < n && s[i] == ' ') {
        i++;
    }
    return i;
}

/* Six-character CANN codes (E or W, a digit or capital, four digits) with word boundaries, in
 * order of position, without repeats: the same as codes.find_error_codes. */
static PyObject *error_codes(const char *s, Py_ssize_t n) {
    Py_ssize_t stack_positions[64];
    Py_ssize_t *positions = stack_positions;
    Py_ssize_t capacity = 64;
    if (n / 6 * 2 + 2 > capacity) {
        capacity = n / 6 * 2 + 2;
        positions = PyMem_Malloc((size_t)capacity * sizeof(Py_ssize_t));
        if (positions == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    Py_ssize_t count = 0;
    const char letters[2] = {'E', 'W'};
    for (int l = 0; l < 2; l++) {
        Py_ssize_t i = 0;
        while (i + 6 <= n) {
            const char *hit = memchr(s + i, letters[l], (size_t)(n - 6 - i + 1));
            if (hit == NULL) {
                break;
            }
            i = hit - s;
            if ((is_upper(s[i + 1]) || is_digit(s[i + 1])) && digits_at(s + i + 2, 4)) {
                int before_ok = i == 0 || !is_word((unsigned char)s[i - 1]);
                int after_ok = i + 6 >= n || !is_word((unsigned char)s[i + 6]);
                if (before_ok && after_ok && count < capacity) {
                    positions[count++] = i;
                }
                i += 6; /* matches do not overlap, as with finditer */
            } else {
                i += 1;
            }
        }
    }
    PyObject *codes = NULL;
    if (count == 0) {
        goto done;
    }
    /* insertion sort by position (few codes per line) */
    for (Py_ssize_t a = 1; a < count; a++) {
        Py_ssize_t key = positions[a];
        Py_ssize_t b = a - 1;
        while (b >= 0 && positions[b] > key) {
            positions[b + 1] = positions[b];
            b--;
        }
        positions[b + 1] = key;
    }
    codes = PyList_New(0);
    if (codes == NULL) {
        goto done;
    }
    for (Py_ssize_t a = 0; a < count; a++) {
        int seen = 0;
        for (Py_ssize_t b = 0; b < a; b++) {
            if (memcmp(s + positions[a], s + positions[b], 6) == 0) {
                seen = 1;
                break;
            }
        }
        if (seen) {
            continue;
        }
        PyObject *code = PyUnicode_FromStringAndSize(s + positions[a], 6);
        if (code == NULL || PyList_Append(codes, code) < 0) {
            Py_XDECREF(code);
            Py_CLEAR(codes);
            goto done;
        }
        Py_DECREF(code);
    }
done:
    if (positions != stack_positions) {
        PyMem_Free(positions);
    }
    return codes;
}

static int set_attr(PyObject *obj, PyObject *name, PyObject *value) {
    if (value == NULL) {
        return -1;
    }
    int result = PyObject_SetAttr(obj, name, value);
    Py_DECREF(value);
    return result;
}

static PyObject *other_line(PyObject *text, Py_ssize_t start, Py_ssize_t end) {
    PyObject *s = PyLong_FromSsize_t(start);
    PyObject *e = PyLong_FromSsize_t(end);
    if (s == NULL || e == NULL) {
        Py_XDECREF(s);
        Py_XDECREF(e);
        Py_XDECREF(text);
        return NULL;
    }
    if (text == NULL) {
        text = Py_None;
        Py_INCREF(text);
    }
    PyObject *item = PyTuple_Pack(3, text, s, e);
    Py_DECREF(text);
    Py_DECREF(s);
    Py_DECREF(e);
    return item;
}

/* One strict-header line to a record; NULL with an exception on failure. */
static PyObject *make_record(PyTypeObject *type, newfunc new_record, PyObject *original,
                             const char *s,
                             Py_ssize_t n, Py_ssize_t header_end, header_spans *h,
                             Py_ssize_t start, Py_ssize_t end, PyObject *source,
                             PyObject *minutes, PyObject *fallback, string_cache *cache,
                             char *last_minute, PyObject **last_base) {
    long flags = 0;
    PyObject *record = new_record(type, state.empty_tuple, NULL);
    if (record == NULL) {
        return NULL;
    }
    Py_INCREF(original);
    if (set_attr(record, state.a_original, original) < 0) goto fail;
    Py_INCREF(state.slog);
    if (set_attr(record, state.a_format, state.slog) < 0) goto fail;
    Py_INCREF(state.level_names[h->level]);
    if (set_attr(record, state.a_level, state.level_names[h->level]) < 0) goto fail;
    if (set_attr(record, state.a_logger,
                 cached_string(cache, s + h->module_start, h->module_end - h->module_start)) < 0)
        goto fail;

    Py_ssize_t pid_length = h->pid_end - h->pid_start;
    const char *pid_text = s + h->pid_start;
    PyObject *pid;
    long long pid_value;
    if (pid_length <= SAFE_DIGITS) {
        int negative = *pid_text == '-';
        long long value = digits_value(pid_text + negative, pid_length - negative);
        pid = PyLong_FromLongLong(negative ? -value : value);
    } else if (fitting_value(pid_text, pid_length, &pid_value)) {
        pid = PyLong_FromLongLong(pid_value);
    } else {
        /* Beyond 64 bits: no pid, and a flag; `original` keeps the digits. */
        flags |= VALUE_OUT_OF_RANGE_FLAG;
        pid = Py_NewRef(Py_None);
    }
    if (set_attr(record, state.a_pid, pid) < 0) goto fail;

    Py_ssize_t pname_start = h->pname_start;
    if (pname_start < h->pname_end && s[pname_start] == ' ') {
        pname_start++; /* `DRV(28499, hccp_service.bin)`: a known anomaly */
    }
    if (set_attr(record, state.a_process_name,
                 cached_string(cache, s + pname_start, h->pname_end - pname_start)) < 0)
        goto fail;

    const char *t = s + h->time_start;
    PyObject *base;
    if (*last_base != NULL && memcmp(last_minute, t, 16) == 0) {
        base = *last_base;
        Py_INCREF(base);
    } else {
        PyObject *minute = PyUnicode_FromStringAndSize(t, 16);
        if (minute == NULL) goto fail;
        base = PyDict_GetItemWithError(minutes, minute); /* borrowed */
        if (base == NULL && PyErr_Occurred()) {
            Py_DECREF(minute);
            goto fail;
        }
        if (base == NULL || base == Py_None) {
            base = PyObject_CallOneArg(fallback, minute);
            if (base == NULL) {
                Py_DECREF(minute);
                goto fail;
            }
        } else {
            Py_INCREF(base);
        }
        Py_DECREF(minute);
        Py_XSETREF(*last_base, base);
        Py_INCREF(base);
        memcpy(last_minute, t, 16);
    }
    /* Seconds past 60 (a leap second) are no time, like a minute that does not exist. */
    int impossible_second = t[17] > '6' || (t[17] == '6' && t[18] > '0');
    if (base == Py_None || impossible_second) {
        /* An impossible date or time: the record is kept, with no time and a flag. */
        Py_DECREF(base);
        flags |= VALUE_OUT_OF_RANGE_FLAG;
        Py_INCREF(Py_None);
        if (set_attr(record, state.a_timestamp_us, Py_None) < 0) goto fail;
    } else {
        long long base_us = PyLong_AsLongLong(base);
        Py_DECREF(base);
        if (base_us == -1 && PyErr_Occurred()) goto fail;
        long long fraction = digits_value(t + 17, 2) * 1000000 + digits_value(t + 20, 3) * 1000 +
                             digits_value(t + 24, 3);
        if (set_attr(record, state.a_timestamp_us, PyLong_FromLongLong(base_us + fraction)) < 0)
            goto fail;
        if (memcmp(t, "2000", 4) < 0) {
            flags |= PRE_CLOCK_SYNC_FLAG;
        }
    }

    if (set_attr(record, state.a_body,
                 PyUnicode_DecodeUTF8(s + header_end, n - header_end, NULL)) < 0)
        goto fail;
    if (set_attr(record, state.a_offset, PyLong_FromSsize_t(start)) < 0) goto fail;
    if (set_attr(record, state.a_end_offset, PyLong_FromSsize_t(end)) < 0) goto fail;
    Py_INCREF(source);
    if (set_attr(record, state.a_source, source) < 0) goto fail;
    PyObject *codes = error_codes(s + header_end, n - header_end);
    if (codes != NULL) {
        flags |= HAS_CODES_FLAG;
        if (set_attr(record, state.a_error_codes, codes) < 0) goto fail;
    } else if (PyErr_Occurred()) {
        goto fail;
    }
    if (flags != 0) {
        if (set_attr(record, state.a_flags, PyLong_FromLong(flags)) < 0) goto fail;
    }
    return record;
fail:
    Py_DECREF(record);
    return NULL;
}

static PyObject *scan_chunk(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 && nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "scan_chunk takes 7 arguments, or 9");
        return NULL;
    }
    PyObject *data = args[0];
    if (!PyBytes_Check(data) || !PyType_Check(args[2]) || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "scan_chunk(bytes, int, type, dict, callable, int, source)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    Py_ssize_t max_line = PyLong_AsSsize_t(args[5]);
    if ((offset == -1 || max_line == -1) && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t first = 0, max_lines = -1;
    if (nargs == 9) {
        first = PyLong_AsSsize_t(args[7]);
        max_lines = PyLong_AsSsize_t(args[8]);
        if ((first == -1 || max_lines == -1) && PyErr_Occurred()) {
            return NULL;
        }
    }
    PyTypeObject *type = (PyTypeObject *)args[2];
    /* The record class's tp_new, called without __init__ (the fields are set here); read
     * through PyType_GetSlot, which the stable ABI has, rather than the struct. */
    newfunc new_record = (newfunc)PyType_GetSlot(type, Py_tp_new);
    if (new_record == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the record type cannot be made");
        return NULL;
    }
    PyObject *minutes = args[3];
    PyObject *fallback = args[4];
    PyObject *source = args[6];

    const char *buffer = PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data);
    PyObject *items = PyList_New(0);
    if (items == NULL) {
        return NULL;
    }
    string_cache cache;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        cache.entries[i].value = NULL;
        cache.entries[i].length = -1;
    }
    cache.next = 0;
    char last_minute[16];
    PyObject *last_base = NULL;

    if (first < 0 || first > size) {
        PyErr_SetString(PyExc_ValueError, "scan_chunk: first is outside the data");
        goto fail;
    }
    Py_ssize_t position = first;
    Py_ssize_t lines = 0;
    while (position < size && (max_lines < 0 || lines < max_lines)) {
        lines++;
        const char *line = buffer + position;
        const char *newline = memchr(line, '\n', (size_t)(size - position));
        Py_ssize_t length = newline ? newline - line : size - position;
        Py_ssize_t start = offset + position;
        Py_ssize_t end = start + length + (newline ? 1 : 0);
        position += length + (newline ? 1 : 0);
        PyObject *item;
        if (length > max_line) {
            item = other_line(NULL, start, end);
        } else {
            PyObject *text = PyUnicode_DecodeUTF8(line, length, NULL);
            if (text == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    goto fail;
                }
                PyErr_Clear();
                item = other_line(NULL, start, end);
            } else {
                Py_ssize_t parse_length = length;
                if (parse_length > 0 && line[parse_length - 1] == '\r') {
                    parse_length--;
                }
                header_spans spans;
                Py_ssize_t header_end = match_header(line, parse_length, &spans);
                if (header_end < 0) {
                    item = other_line(text, start, end);
                } else {
                    item = make_record(type, new_record, text, line, parse_length, header_end, &spans, start,
                                       end, source, minutes, fallback, &cache, last_minute,
                                       &last_base);
                    Py_DECREF(text);
                }
            }
        }
        if (item == NULL) {
            goto fail;
        }
        if (PyList_Append(items, item) < 0) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    cache_clear(&cache);
    Py_XDECREF(last_base);
    return items;
fail:
    cache_clear(&cache);
    Py_XDECREF(last_base);
    Py_DECREF(items);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan_chunk", (PyCFunction)(void (*)(void))scan_chunk, METH_FASTCALL,
     "The first parsing pass over a chunk (see npuwatch.parsers.first_pass)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_speedups", "C implementation of npuwatch's first parsing pass.", -1,
    methods,
};

#define INTERN(target, text)                          \
    do {                                              \
        target = PyUnicode_InternFromString(text);    \
        if (target == NULL) return NULL;              \
    } while (0)

PyMODINIT_FUNC PyInit__speedups(void) {
    for (int k = 0; k < 8; k++) {
        INTERN(state.level_names[k], LEVELS[k]);
    }
    INTERN(state.slog, "slog");
    state.empty_tuple = PyTuple_New(0);
    if (state.empty_tuple == NULL) return NULL;
    INTERN(state.a_original, "original");
    INTERN(state.a_format, "format");
    INTERN(state.a_level, "level");
    INTERN(state.a_logger, "logger");
    INTERN(state.a_pid, "pid");
    INTERN(state.a_process_name, "process_name");
    INTERN(state.a_timestamp_us, "timestamp_us");
    INTERN(state.a_body, "body");
    INTERN(state.a_offset, "offset");
    INTERN(state.a_end_offset, "end_offset");
    INTERN(state.a_source, "source");
    INTERN(state.a_flags, "flags");
    INTERN(state.a_error_codes, "error_codes");
    return PyModule_Create(&module_definition);
}
