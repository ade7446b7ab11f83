// A preloaded stand-in for glibc's malloc_trim, to measure what the file store's call to it after a large flush
// (FreedMemory in Sources/Defaults/Storage/FileStore+Flushing.swift) gives back: the store finds malloc_trim with
// dlsym at run time, and a library named in LD_PRELOAD is found before the C library. The same library serves both
// sides of the comparison, so that both processes carry the same preloaded code:
//
//     cc -shared -fPIC -O2 -o /tmp/malloc-trim-shim.so Benchmarks/malloc-trim-shim.c -ldl
//     MALLOC_TRIM_SHIM=off LD_PRELOAD=/tmp/malloc-trim-shim.so Benchmarks/.build/release/ResidentMemory
//     MALLOC_TRIM_SHIM=on LD_PRELOAD=/tmp/malloc-trim-shim.so Benchmarks/.build/release/ResidentMemory
//
// `off` returns at once (nothing is given back), `on` calls glibc's malloc_trim. Each process that called it prints
// to standard error how many times it did at exit.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int calls;
static int isOff;

static void report(void) {
	if (calls > 0) {
		fprintf(stderr, "malloc-trim-shim (%s): malloc_trim called %d times\n", isOff ? "off" : "on", calls);
	}
}

__attribute__((constructor)) static void start(void) {
	const char *mode = getenv("MALLOC_TRIM_SHIM");
	isOff = mode != NULL && strcmp(mode, "off") == 0;
	atexit(report);
}

int malloc_trim(size_t pad) {
	calls++;
	if (isOff) {
		return 0;
	}
	int (*trim)(size_t) = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
	return trim == NULL ? 0 : trim(pad);
}
