/* The counting CHECK macro shared by the C test programs; they print "N passed, M failed". */
#pragma once
#include <stdio.h>

static int passed, failed;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            passed++;                                                            \
        } else {                                                                 \
            failed++;                                                            \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                        \
    } while (0)
