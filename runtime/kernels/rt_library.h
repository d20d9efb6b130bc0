/* The kernel library's calls for opaque ops (transpiler/lowering/library_calls.py): random numbers, sorting,
 * linear algebra and index tuples. */
#ifndef RT_LIBRARY_H
#define RT_LIBRARY_H

#include "rt_random.h"
#include "rt_sort.h"
#include "rt_linalg.h"
#include "rt_index.h"

#endif
