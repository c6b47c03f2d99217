/* The launch fast paths' per-call work in C (docs/runtime.md, "The native fast path").

   The same lookups `seen_calls.SeenCalls.find` makes in Python, for the common call (every
   argument a torch tensor), without the Python frames: this is most of a launch's host time
   that is not the driver's. It decides nothing of its own: the tables, the layout checks and
   the templates' re-checks are made in Python when a call is bound in full.

   fast_call(state, arguments, stream) -> the outputs dict, or None (not this path: the caller
   takes the Python path, which binds and checks what needs it), where state is the tuple
   (entries, layouts, tensor_type, data_ptr, current_stream, outputs, on_failure, launch):

   - entries: {(*names, *data pointers): (check, launch, plans, make_plan)}: a call seen
     before, `check(*tensors)` its layout check, `plans` {stream: plan} and `make_plan(stream)`
     the plan that launches it on a stream (made once a stream): (((CUlaunchConfig address,
     function, extra address) per launch, in order), what owns them);
   - layouts: {names: [(check, plans, make_plan, template, ...)]}: a layout seen before (template
     None: launched by the Python path, which keeps that launch as a seen call); its
     plan: (((config address, function) per launch), ((word, value) a parameter word set per
     stream), owners); the template an int64 buffer (`launch_template.CallTemplate.native`):
     [words, addresses, aligned, disjoint, the parameter words..., (word, pointer index,
     difference) per address, (pointer index, difference) per aligned view, (index, low, high,
     index, low, high) per noalias pair, index -1 for bytes that do not move];
   - tensor_type: torch.Tensor (any other argument: not this path), data_ptr(tensor) -> int
     (raises for a tensor without one: sparse), current_stream() -> int,
     outputs: the out/inout names, on_failure(status) raises the launch's error,
     launch: the address of cuLaunchKernelEx.

   The GIL is released around the driver call, as ctypes does; a template's parameters are
   set in a buffer on this thread's stack (the driver copies them during the launch). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*LaunchEx)(void *config, void *function, void *params, void *extra);

enum { MAX_ARGUMENTS = 64, MAX_WORDS = 4096, EXTRA_WORDS = 6, MAX_STAGES = 16 };
enum { CU_LAUNCH_PARAM_END = 0, CU_LAUNCH_PARAM_BUFFER_POINTER = 1, CU_LAUNCH_PARAM_BUFFER_SIZE = 2 };

typedef struct {
    PyObject *arguments, *stream;
    PyObject *values[MAX_ARGUMENTS];
    uint64_t pointers[MAX_ARGUMENTS];
    Py_ssize_t count, tensors;     /* arguments; tensors among them (values, pointers) */
    LaunchEx launch;
} Call;

/* 1: the tensors pass `check`, 0: they do not, -1: an error (set). */
static int passes(PyObject *check, Call *call) {
    PyObject *result = PyObject_Vectorcall(check, call->values, (size_t)call->tensors, NULL);
    if (result == NULL)
        return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* The plan of a launch (or a template) on the call's stream: `plans[stream]`, else made by
   `make_plan(stream)` (which keeps it in `plans`); a new reference, NULL with an error set. */
static PyObject *plan_for(PyObject *plans, PyObject *make_plan, Call *call) {
    PyObject *plan = PyDict_GetItemWithError(plans, call->stream);
    if (plan != NULL)
        return Py_NewRef(plan);
    return PyErr_Occurred() ? NULL : PyObject_CallOneArg(make_plan, call->stream);
}

/* The launches of a plan, in order, with the GIL released: the first failing one's status. */
static int launch_all(Call *call, PyObject *launches, void *extra) {
    Py_ssize_t count = PyTuple_GET_SIZE(launches);
    void *config[MAX_STAGES], *function[MAX_STAGES], *own_extra[MAX_STAGES];
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *launch = PyTuple_GET_ITEM(launches, i);
        config[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(launch, 0));
        function[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(launch, 1));
        own_extra[i] = extra != NULL ? extra : PyLong_AsVoidPtr(PyTuple_GET_ITEM(launch, 2));
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count && status == 0; i++)
        status = call->launch(config[i], function[i], NULL, own_extra[i]);
    Py_END_ALLOW_THREADS
    return status;
}

/* A plan's launches are well formed: a tuple of 1..MAX_STAGES tuples of `items` ints. */
static int well_formed(PyObject *plan, Py_ssize_t size, Py_ssize_t items) {
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != size || !PyTuple_Check(PyTuple_GET_ITEM(plan, 0)))
        return 0;
    PyObject *launches = PyTuple_GET_ITEM(plan, 0);
    if (PyTuple_GET_SIZE(launches) < 1 || PyTuple_GET_SIZE(launches) > MAX_STAGES)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(launches); i++) {
        PyObject *launch = PyTuple_GET_ITEM(launches, i);
        if (!PyTuple_Check(launch) || PyTuple_GET_SIZE(launch) != items)
            return 0;
    }
    return 1;
}

/* 1: launched (status in *status), 0: not this path, -1: an error (set). */
static int launch_seen(PyObject *entry, Call *call, int *status) {
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4 || !PyDict_Check(PyTuple_GET_ITEM(entry, 2)))
        return 0;
    int checked = passes(PyTuple_GET_ITEM(entry, 0), call);
    if (checked <= 0)
        return checked;
    PyObject *plan = plan_for(PyTuple_GET_ITEM(entry, 2), PyTuple_GET_ITEM(entry, 3), call);
    if (plan == NULL)
        return -1;
    int result = 0;
    if (well_formed(plan, 2, 3)) {
        *status = launch_all(call, PyTuple_GET_ITEM(plan, 0), NULL);
        result = PyErr_Occurred() ? -1 : 1;
    }
    Py_DECREF(plan);
    return result;
}

/* The template buffer holds what its header says, every word and pointer index in range
   (a template of this layout always does: a call that does not is left to the Python path). */
static int well_sized(const int64_t *t, Py_ssize_t bytes, Call *call) {
    if (bytes < 4 * 8)
        return 0;
    int64_t words = t[0], addresses = t[1], aligned = t[2], disjoint = t[3];
    if (words < 0 || words > MAX_WORDS || addresses < 0 || aligned < 0 || disjoint < 0 ||
        addresses > MAX_ARGUMENTS || aligned > MAX_ARGUMENTS || disjoint > MAX_ARGUMENTS * MAX_ARGUMENTS ||
        bytes / 8 != 4 + words + 3 * addresses + 2 * aligned + 6 * disjoint)
        return 0;
    const int64_t *address = t + 4 + words, *align = address + 3 * addresses, *pair = align + 2 * aligned;
    for (int64_t i = 0; i < addresses; i++)
        if (address[3 * i] < 0 || address[3 * i] >= words || address[3 * i + 1] < 0 ||
            address[3 * i + 1] >= call->tensors)
            return 0;
    for (int64_t i = 0; i < aligned; i++)
        if (align[2 * i] < 0 || align[2 * i] >= call->tensors)
            return 0;
    for (int64_t i = 0; i < disjoint; i++)
        if (pair[6 * i] >= call->tensors || pair[6 * i + 3] >= call->tensors)
            return 0;
    return 1;
}

/* The template's parameter words with this call's addresses (and the stream's own words),
   after its re-checks: 1 launched, 0 a re-check failed, -1 an error (set). */
static int launch_template(PyObject *item, Call *call, int *status) {
    Py_buffer view;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 3), &view, PyBUF_SIMPLE) < 0)
        return -1;
    if (!well_sized((const int64_t *)view.buf, view.len, call)) {
        PyBuffer_Release(&view);
        return 0;
    }
    const int64_t *t = (const int64_t *)view.buf;
    int64_t words = t[0], addresses = t[1], aligned = t[2], disjoint = t[3];
    const int64_t *word = t + 4, *address = word + words, *align = address + 3 * addresses,
                  *pair = align + 2 * aligned;
    int result = 0;
    PyObject *plan = NULL;
    for (int64_t i = 0; i < aligned; i++)
        if ((call->pointers[align[2 * i]] + (uint64_t)align[2 * i + 1]) % 16)
            goto done;
    for (int64_t i = 0; i < disjoint; i++) {
        const int64_t *p = pair + 6 * i;
        uint64_t low = (uint64_t)p[1], high = (uint64_t)p[2], other_low = (uint64_t)p[4], other_high = (uint64_t)p[5];
        if (p[0] >= 0)
            low += call->pointers[p[0]], high += call->pointers[p[0]];
        if (p[3] >= 0)
            other_low += call->pointers[p[3]], other_high += call->pointers[p[3]];
        if (low < other_high && other_low < high)
            goto done;
    }
    plan = plan_for(PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2), call);
    if (plan == NULL) {
        result = -1;
        goto done;
    }
    if (!well_formed(plan, 3, 2) || !PyTuple_Check(PyTuple_GET_ITEM(plan, 1)))
        goto done;
    uint64_t block[MAX_WORDS + EXTRA_WORDS];
    memcpy(block, word, (size_t)words * 8);
    for (int64_t i = 0; i < addresses; i++)
        block[address[3 * i]] = call->pointers[address[3 * i + 1]] + (uint64_t)address[3 * i + 2];
    PyObject *own = PyTuple_GET_ITEM(plan, 1);      /* (word, value): the words the stream sets */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(own); i++) {
        PyObject *set = PyTuple_GET_ITEM(own, i);
        if (!PyTuple_Check(set) || PyTuple_GET_SIZE(set) != 2)
            goto done;
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(set, 0));
        if (at < 0 || at >= words)
            goto done;
        block[at] = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(set, 1));
    }
    uint64_t *extra = block + words;
    uint64_t size = (uint64_t)words * 8;
    extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, extra[1] = (uint64_t)(uintptr_t)block;
    extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, extra[3] = (uint64_t)(uintptr_t)&size;
    extra[4] = CU_LAUNCH_PARAM_END;
    if (PyErr_Occurred()) {
        result = -1;
        goto done;
    }
    *status = launch_all(call, PyTuple_GET_ITEM(plan, 0), extra);
    result = PyErr_Occurred() ? -1 : 1;
done:
    Py_XDECREF(plan);
    PyBuffer_Release(&view);
    if (PyErr_Occurred())
        result = -1;
    return result;
}

/* The first template of the call's layout whose check the tensors pass. */
static int launch_from_layout(PyObject *layouts, PyObject *layout, Call *call, int *status) {
    PyObject *found = PyDict_GetItemWithError(layouts, layout);
    if (found == NULL || !PyList_Check(found))
        return PyErr_Occurred() ? -1 : 0;
    /* a copy: another thread may change the list while a check runs Python code */
    PyObject *items = PyList_GetSlice(found, 0, PyList_GET_SIZE(found));
    if (items == NULL)
        return -1;
    int result = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items) && result == 0; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 4)
            continue;
        int checked = passes(PyTuple_GET_ITEM(item, 0), call);
        if (checked > 0 && PyTuple_GET_ITEM(item, 3) == Py_None)
            break;      /* a template whose launches the Python path makes (tensor maps) */
        result = checked <= 0 ? checked : launch_template(item, call, status);
        if (checked > 0 && result == 0)
            break;      /* its re-checks failed: the full binding reports why */
    }
    Py_DECREF(items);
    return result;
}

/* What the key holds of a scalar argument: (its type, a summary), as `seen_calls._summary`
   has it for a Python float (its IEEE bytes), int or bool (its value); 0: not a scalar this
   path keys (the Python path does), -1: an error (set). */
static int scalar_items(PyObject *value, PyObject **type, PyObject **summary) {
    if (PyFloat_CheckExact(value)) {
        char bytes[8];
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(value), bytes, 1) < 0)
            return -1;
        *summary = PyBytes_FromStringAndSize(bytes, 8);
    } else if (PyLong_CheckExact(value) || PyBool_Check(value)) {
        *summary = Py_NewRef(value);
    } else {
        return 0;
    }
    *type = Py_NewRef((PyObject *)Py_TYPE(value));
    return *summary != NULL ? 1 : -1;
}

/* The call's keys as `seen_calls._keys` makes them, its tensors and their data pointers:
   every argument a tensor, (*names, *pointers) and the layout key (*names); else, per
   argument, (name, pointer) for a tensor and (name, type, summary) for a scalar, and
   (name, None) or the same in the layout key. 0 (nothing set): an argument of another kind. */
static int call_keys(Call *call, PyObject *tensor_type, PyObject *data_ptr, PyObject **key, PyObject **layout) {
    PyObject *items[2 * MAX_ARGUMENTS], *names[MAX_ARGUMENTS];
    Py_ssize_t count = 0, scalars = 0, position = 0;
    PyObject *name, *value;
    int result = 1;
    call->tensors = 0;
    while (result == 1 && PyDict_Next(call->arguments, &position, &name, &value)) {
        names[count++] = name;
        items[2 * (count - 1)] = items[2 * (count - 1) + 1] = NULL;
        if (PyObject_TypeCheck(value, (PyTypeObject *)tensor_type)) {
            PyObject *pointer = PyObject_CallOneArg(data_ptr, value);
            if (pointer == NULL) {      /* a tensor without one (sparse): the Python path */
                result = PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_RuntimeError) ? 0 : -1;
                if (result == 0)
                    PyErr_Clear();
                break;
            }
            call->pointers[call->tensors] = (uint64_t)PyLong_AsUnsignedLongLongMask(pointer);
            call->values[call->tensors] = value;
            items[2 * (count - 1)] = pointer;
            call->tensors++;
        } else {
            result = scalar_items(value, &items[2 * (count - 1)], &items[2 * (count - 1) + 1]);
            scalars += result == 1;
        }
    }
    if (result == 1) {
        *key = PyTuple_New(scalars ? 2 * count + scalars : 2 * count);
        *layout = PyTuple_New(scalars ? 2 * count + scalars : count);
        Py_ssize_t at = 0, layout_at = 0;
        for (Py_ssize_t i = 0; *key != NULL && *layout != NULL && i < count; i++) {
            PyObject *first = items[2 * i], *second = items[2 * i + 1];
            if (!scalars) {             /* names, then pointers; the layout key: the names */
                PyTuple_SET_ITEM(*key, i, Py_NewRef(names[i]));
                PyTuple_SET_ITEM(*key, count + i, Py_NewRef(first));
                PyTuple_SET_ITEM(*layout, i, Py_NewRef(names[i]));
                continue;
            }
            PyTuple_SET_ITEM(*key, at++, Py_NewRef(names[i]));
            PyTuple_SET_ITEM(*key, at++, Py_NewRef(first));
            PyTuple_SET_ITEM(*layout, layout_at++, Py_NewRef(names[i]));
            PyTuple_SET_ITEM(*layout, layout_at++, Py_NewRef(second ? first : Py_None));
            if (second) {
                PyTuple_SET_ITEM(*key, at++, Py_NewRef(second));
                PyTuple_SET_ITEM(*layout, layout_at++, Py_NewRef(second));
            }
        }
        if (*key == NULL || *layout == NULL) {
            Py_CLEAR(*key);
            Py_CLEAR(*layout);
            result = -1;
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_XDECREF(items[2 * i]);
        Py_XDECREF(items[2 * i + 1]);
    }
    return result;
}

static PyObject *outputs_of(Call *call, PyObject *outputs) {
    PyObject *result = PyDict_New();
    for (Py_ssize_t i = 0; result != NULL && i < PyTuple_GET_SIZE(outputs); i++) {
        PyObject *name = PyTuple_GET_ITEM(outputs, i);
        PyObject *value = PyDict_GetItemWithError(call->arguments, name);
        if (value != NULL && PyDict_SetItem(result, name, value) < 0)
            Py_CLEAR(result);
    }
    return result;
}

static PyObject *fast_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 8 || !PyDict_CheckExact(args[1]) ||
        !PyType_Check(PyTuple_GET_ITEM(args[0], 2)))
        Py_RETURN_NONE;
    PyObject *state = args[0];
    Call call = {.arguments = args[1], .count = PyDict_GET_SIZE(args[1])};
    if (call.count == 0 || call.count > MAX_ARGUMENTS)
        Py_RETURN_NONE;
    call.launch = (LaunchEx)PyLong_AsVoidPtr(PyTuple_GET_ITEM(state, 7));
    if (call.launch == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *key = NULL, *layout = NULL;
    int keyed = call_keys(&call, PyTuple_GET_ITEM(state, 2), PyTuple_GET_ITEM(state, 3), &key, &layout);
    if (keyed <= 0)
        return keyed < 0 ? NULL : Py_NewRef(Py_None);
    if (args[2] == Py_None) {
        call.stream = PyObject_CallNoArgs(PyTuple_GET_ITEM(state, 4));
    } else if (PyLong_CheckExact(args[2])) {
        call.stream = Py_NewRef(args[2]);
    } else {
        Py_DECREF(key);
        Py_DECREF(layout);
        Py_RETURN_NONE;     /* a stream object: the Python path reads its handle */
    }
    if (call.stream == NULL) {
        Py_DECREF(key);
        Py_DECREF(layout);
        return NULL;
    }
    int status = 0, launched = 0;
    PyObject *entry = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, 0), key);
    if (entry != NULL) {
        Py_INCREF(entry);       /* alive through the launch, whatever another thread does to the table */
        launched = launch_seen(entry, &call, &status);
        Py_DECREF(entry);
    }
    if (launched == 0 && !PyErr_Occurred())
        launched = launch_from_layout(PyTuple_GET_ITEM(state, 1), layout, &call, &status);
    Py_DECREF(key);
    Py_DECREF(layout);
    Py_DECREF(call.stream);
    if (launched < 0 || PyErr_Occurred())
        return NULL;
    if (launched == 0)
        Py_RETURN_NONE;
    if (status != 0) {
        PyObject *code = PyLong_FromLong(status);
        PyObject *raised = code ? PyObject_CallOneArg(PyTuple_GET_ITEM(state, 6), code) : NULL;
        Py_XDECREF(code);
        Py_XDECREF(raised);
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    return outputs_of(&call, PyTuple_GET_ITEM(state, 5));
}

static PyMethodDef methods[] = {
    {"fast_call", (PyCFunction)(void (*)(void))fast_call, METH_FASTCALL,
     "fast_call(state, arguments, stream): the outputs of a launch made from a call or a layout seen before, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "intentc_native_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_intentc_native_launch(void) { return PyModule_Create(&definition); }
