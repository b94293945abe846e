/*
 * The trigram filters of a journal block's text frames (block format 3, journal/text_frames.py):
 * what `filter_python` and `passing_python` in journal/trigram_filter.py compute, at C speed.
 * Those functions are the contract and the reference; tests compare the two on arbitrary bytes.
 *
 * It exists because building the filters is a pass over every byte of every record the agent
 * journals: the Python set of each 16 KiB frame's trigrams cost 31 s of CPU for a 1M-line tree
 * (docs/adr/0005-grep-text-index.md), this pass a fraction of a second.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "limited_api.h"
#include <stdint.h>
#include <string.h>

#define GOLDEN 2654435761u /* Knuth's multiplicative hash: the top bits of v * GOLDEN mod 2^32 */

static int checked_log2(int log2_bits) {
    if (log2_bits < 3 || log2_bits > 24) {
        PyErr_SetString(PyExc_ValueError, "a filter has 2**3 to 2**24 bits");
        return -1;
    }
    return 0;
}

/* trigram_filter(frame, log2_bits) -> bytes: one bit set per distinct hashed byte trigram. */
static PyObject *trigram_filter(PyObject *module, PyObject *args) {
    Py_buffer frame;
    int log2_bits;
    if (!PyArg_ParseTuple(args, "y*i", &frame, &log2_bits)) return NULL;
    if (checked_log2(log2_bits) < 0) {
        PyBuffer_Release(&frame);
        return NULL;
    }
    Py_ssize_t size = (Py_ssize_t)1 << (log2_bits - 3);
    PyObject *result = PyBytes_FromStringAndSize(NULL, size);
    if (result == NULL) {
        PyBuffer_Release(&frame);
        return NULL;
    }
    uint8_t *bits = (uint8_t *)PyBytes_AsString(result);
    memset(bits, 0, (size_t)size);
    const uint8_t *text = (const uint8_t *)frame.buf;
    Py_ssize_t length = frame.len;
    int shift = 32 - log2_bits;
    Py_BEGIN_ALLOW_THREADS
    if (length >= 3) {
        uint32_t v = ((uint32_t)text[0] << 8) | text[1];
        for (Py_ssize_t i = 2; i < length; i++) {
            v = ((v << 8) | text[i]) & 0xFFFFFFu;
            uint32_t h = (uint32_t)(v * GOLDEN) >> shift;
            bits[h >> 3] |= (uint8_t)(1u << (h & 7));
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&frame);
    return result;
}

/* passing_frames(filters, log2_bits, probes) -> list of the indexes of the filters (laid end to
 * end in `filters`) in which every bit of `probes` (32-bit bit positions) is set. */
static PyObject *passing_frames(PyObject *module, PyObject *args) {
    Py_buffer filters, probes;
    int log2_bits;
    if (!PyArg_ParseTuple(args, "y*iy*", &filters, &log2_bits, &probes)) return NULL;
    PyObject *result = NULL;
    if (checked_log2(log2_bits) < 0) goto done;
    if (probes.len % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "probes are 32-bit bit positions");
        goto done;
    }
    Py_ssize_t size = (Py_ssize_t)1 << (log2_bits - 3);
    Py_ssize_t count = filters.len / size;
    Py_ssize_t wanted = probes.len / 4;
    const uint8_t *all = (const uint8_t *)filters.buf;
    uint32_t *positions = PyMem_Malloc(sizeof(uint32_t) * (size_t)(wanted ? wanted : 1));
    if (positions == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(positions, probes.buf, (size_t)probes.len);
    for (Py_ssize_t i = 0; i < wanted; i++) {
        if (positions[i] >= (uint32_t)(size * 8)) {
            PyMem_Free(positions);
            PyErr_SetString(PyExc_ValueError, "a probe beyond the filter");
            goto done;
        }
    }
    result = PyList_New(0);
    if (result == NULL) {
        PyMem_Free(positions);
        goto done;
    }
    for (Py_ssize_t f = 0; f < count; f++) {
        const uint8_t *bits = all + f * size;
        Py_ssize_t i = 0;
        while (i < wanted && (bits[positions[i] >> 3] >> (positions[i] & 7)) & 1) i++;
        if (i < wanted) continue;
        PyObject *index = PyLong_FromSsize_t(f);
        if (index == NULL || PyList_Append(result, index) < 0) {
            Py_XDECREF(index);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(index);
    }
    PyMem_Free(positions);
done:
    PyBuffer_Release(&filters);
    PyBuffer_Release(&probes);
    return result;
}

static PyMethodDef methods[] = {
    {"trigram_filter", trigram_filter, METH_VARARGS,
     "trigram_filter(frame, log2_bits) -> the frame's trigram filter."},
    {"passing_frames", passing_frames, METH_VARARGS,
     "passing_frames(filters, log2_bits, probes) -> indexes of the filters holding every probe."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_trigrams", "Trigram filters of journal text frames.", -1, methods,
};

PyMODINIT_FUNC PyInit__trigrams(void) { return PyModule_Create(&module_definition); }
