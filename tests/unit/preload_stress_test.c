/*
 * preload_stress_test.c: the runtime's sampled path without preloading:
 * 16 threads record sampled allocations (stack table + sampled set, as
 * rt_sample_end does) and free each other's blocks (set remove + table free,
 * as rt_free_sampled does), while another thread keeps building profiles
 * from the same tables, as the dumper does. Afterwards every count must be
 * exact. AP_TEST_THREADED: CI runs this under ThreadSanitizer, which is how
 * the runtime's locking is checked (the .so itself cannot be preloaded into
 * a sanitized program).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "allocprof/profile.h"
#include "aptest.h"
#include "dump.h"
#include "sampled_set.h"
#include "stack_table.h"

enum { THREADS = 16, OPS = 20000, SLOTS = 64 };

static arena a;
static stack_table table;
static sampled_set set;
/* Blocks handed between threads, like pointers passed to other threads. */
static _Atomic uintptr_t slots[SLOTS];
static atomic_bool done;
static atomic_int errors;
static atomic_int profiles;

static void free_sampled(uintptr_t p)
{
	sample_rec rec;
	if (!set_remove(&set, (const void *)p, &rec))
		atomic_fetch_add(&errors, 1);
	else
		table_record_free(&table, &rec, rec.t_ns + 10);
}

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	unsigned seed = (unsigned)id * 2654435761u + 7;
	for (uintptr_t i = 0; i < OPS; i++) {
		seed = seed * 1103515245u + 12345u;
		/* A unique fake block address per (thread, op). */
		uintptr_t p = 0x10000000ULL + ((id << 24) | (i << 4));
		uintptr_t pcs[3] = { 0x1000 + (seed >> 28), 0x2000 + id, 0x3000 };
		ap_sample_info in;
		memset(&in, 0, sizeof in);
		in.size = 16 + (seed >> 20) % 4096;
		in.count = 1;
		in.prob = 1;
		in.weight = 1;
		sample_rec rec;
		if (table_record_alloc(&table, pcs, 3, 1, &in, in.size, &rec, NULL) != 0 ||
		    (rec.t_ns = i, set_insert(&set, (const void *)p, &rec)) != 0) {
			atomic_fetch_add(&errors, 1);
			continue;
		}
		uintptr_t old = atomic_exchange(&slots[(seed >> 8) % SLOTS], p);
		if (old)
			free_sampled(old);
	}
	return NULL;
}

static void *dumper(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		dump_input in = { .table = &table, .a = &a, .period = 1,
				  .with_mappings = false };
		ap_profile *p = NULL;
		if (dump_build_profile(&in, &p) != 0 || ap_profile_validate(p, NULL, 0) != 0)
			atomic_fetch_add(&errors, 1);
		ap_profile_destroy(p);
		atomic_fetch_add(&profiles, 1);
	}
	return NULL;
}

AP_TEST(threads_sampling_freeing_and_dumping_keep_exact_counts)
{
	AP_CHECK_EQ_INT(arena_init(&a), 0);
	AP_CHECK_EQ_INT(table_init(&table, &a), 0);
	set_init(&set, NULL);
	pthread_t w[THREADS], d;
	AP_CHECK(pthread_create(&d, NULL, dumper, NULL) == 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		AP_CHECK(pthread_create(&w[i], NULL, worker, (void *)i) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&done, true);
	pthread_join(d, NULL);
	AP_CHECK_EQ_INT(atomic_load(&errors), 0);
	AP_CHECK(atomic_load(&profiles) >= 1);

	size_t live = 0;
	for (int i = 0; i < SLOTS; i++)
		live += atomic_load(&slots[i]) != 0;
	table_totals tot;
	table_totals_get(&table, &tot);
	AP_CHECK_EQ_U64(tot.samples, THREADS * OPS);
	AP_CHECK_EQ_U64(tot.frees, THREADS * OPS - live);
	AP_CHECK_EQ_U64(set_size(&set), live);
	AP_CHECK_NEAR(tot.inuse_objects, (double)live, 0, 1e-9);

	/* The final profile agrees with the tables, sample by sample summed. */
	dump_input in = { .table = &table, .a = &a, .period = 1, .with_mappings = false };
	ap_profile *p = NULL;
	AP_CHECK_EQ_INT(dump_build_profile(&in, &p), 0);
	int io = ap_profile_find_sample_type(p, "inuse_objects");
	int ao = ap_profile_find_sample_type(p, "alloc_objects");
	int64_t inuse = 0, alloc = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		inuse += p->samples[i].values[io];
		alloc += p->samples[i].values[ao];
	}
	AP_CHECK_EQ_INT(inuse, (int64_t)live);
	AP_CHECK_EQ_INT(alloc, THREADS * OPS);
	ap_profile_destroy(p);
}
