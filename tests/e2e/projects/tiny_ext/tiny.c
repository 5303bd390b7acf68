#define PY_SSIZE_T_CLEAN
#include <Python.h>

int tiny_add(int a, int b);

static PyObject* add(PyObject* self, PyObject* args) {
  int a, b;
  (void)self;
  if (!PyArg_ParseTuple(args, "ii", &a, &b)) return NULL;
  return PyLong_FromLong(tiny_add(a, b));
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tiny_ext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tiny_ext(void) { return PyModule_Create(&module); }
