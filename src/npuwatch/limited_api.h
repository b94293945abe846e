/* The few CPython macros npuwatch's C extensions use, as the limited API's functions when the
 * extensions are built for the stable ABI (one abi3 wheel for every Python from 3.11 on): the
 * macros read the objects' structs, which the stable ABI keeps private. Built for one Python
 * only (3.10, or a build without Py_LIMITED_API), the macros stay as CPython defines them. */
#ifndef NPUWATCH_LIMITED_API_H
#define NPUWATCH_LIMITED_API_H

#ifdef Py_LIMITED_API
#define PyList_GET_SIZE(o) PyList_Size(o)
#define PyList_GET_ITEM(o, i) PyList_GetItem((o), (i))
#define PyList_SET_ITEM(o, i, v) ((void)PyList_SetItem((o), (i), (v)))
#define PyTuple_SET_ITEM(o, i, v) ((void)PyTuple_SetItem((o), (i), (v)))
#define PyBytes_AS_STRING(o) PyBytes_AsString(o)
#define PyBytes_GET_SIZE(o) PyBytes_Size(o)
#define PyUnicode_GET_LENGTH(o) PyUnicode_GetLength(o)
/* (abstract.h defines these two with the list and tuple macros, which the limited API lacks) */
#undef PySequence_Fast_GET_SIZE
#undef PySequence_Fast_GET_ITEM
#define PySequence_Fast_GET_SIZE(o) PySequence_Size(o)
#define PySequence_Fast_GET_ITEM(o, i) \
    (PyList_Check(o) ? PyList_GetItem((o), (i)) : PyTuple_GetItem((o), (i)))
#define PyObject_CallOneArg(f, a) PyObject_CallFunctionObjArgs((f), (a), NULL)
#define Py_XSETREF(dst, src)              \
    do {                                  \
        PyObject *_npuwatch_old = (dst);  \
        (dst) = (src);                    \
        Py_XDECREF(_npuwatch_old);        \
    } while (0)
#endif

#endif
