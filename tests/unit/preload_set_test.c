/*
 * preload_set_test.c: the runtime's lock-free set of sampled pointers
 * (src/preload/sampled_set.h) alone and under 4 threads inserting, removing
 * and looking up at once while the table grows; tombstones must not pile up.
 * AP_TEST_THREADED: CI runs this file under ThreadSanitizer.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aptest.h"
#include "sampled_set.h"

/* Fake, distinct, 16-aligned "pointers" (never dereferenced). */
static const void *fake(uint64_t thread, uint64_t i)
{
	return (const void *)(uintptr_t)(0x100000000ULL + (thread << 32) + i * 16);
}

static sample_rec rec_for(uint64_t i)
{
	sample_rec r;
	memset(&r, 0, sizeof r);
	r.weight = (double)i + 0.5;
	r.u = i;
	r.usable = i * 2;
	r.t_ns = i * 3;
	return r;
}

AP_TEST(empty_set_contains_nothing)
{
	sampled_set s;
	set_init(&s, NULL);
	AP_CHECK(!set_contains(&s, fake(0, 1)));
	AP_CHECK(!set_contains(&s, NULL));
	AP_CHECK(!set_remove(&s, fake(0, 1), NULL));
	AP_CHECK_EQ_U64(set_size(&s), 0);
}

AP_TEST(insert_then_remove_returns_the_record)
{
	sampled_set s;
	set_init(&s, NULL);
	sample_rec r = rec_for(7), out;
	AP_CHECK_EQ_INT(set_insert(&s, fake(0, 7), &r), 0);
	AP_CHECK(set_contains(&s, fake(0, 7)));
	AP_CHECK(!set_contains(&s, fake(0, 8)));
	AP_CHECK(set_get(&s, fake(0, 7), &out));
	AP_CHECK_EQ_U64(out.u, 7);
	AP_CHECK(set_remove(&s, fake(0, 7), &out));
	AP_CHECK(out.weight == 7.5 && out.usable == 14 && out.t_ns == 21);
	AP_CHECK(!set_contains(&s, fake(0, 7)));
	/* A second remove (a double free) reports absence. */
	AP_CHECK(!set_remove(&s, fake(0, 7), &out));
}

static set_filter filter;

/* The live count in a granule's filter word (its low byte). */
static uint64_t count_of(uintptr_t p)
{
	return filter.word[set_filter_index(p)] & SET_FILTER_COUNT;
}

AP_TEST(the_granule_filter_counts_live_keys)
{
	sampled_set s;
	memset(&filter, 0, sizeof filter);
	set_init(&s, &filter);
	const uintptr_t g = (uintptr_t)1 << SET_FILTER_SHIFT; /* one granule */
	const uintptr_t a = 0x7f0000000000u, b = a + 3 * g + 16;
	const uintptr_t alias = a + ((uintptr_t)SET_FILTER_SIZE << SET_FILTER_SHIFT);
	sample_rec r = rec_for(1);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)a, &r), 0);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + g - 16), &r), 0); /* same granule */
	AP_CHECK_EQ_INT(set_insert(&s, (void *)b, &r), 0);
	AP_CHECK_EQ_U64(count_of(a), 2);
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a + g)], 0);
	AP_CHECK_EQ_U64(count_of(b), 1);
	/* 4 GiB further on, the same counter: a lookup, never a miss. */
	AP_CHECK_EQ_U64(set_filter_index(alias), set_filter_index(a));
	AP_CHECK_EQ_INT(set_insert(&s, (void *)alias, &r), 0);
	AP_CHECK_EQ_U64(count_of(a), 3);
	/* Removing an absent key (a double free) changes nothing. */
	AP_CHECK(!set_remove(&s, (void *)(a + 16), NULL));
	AP_CHECK_EQ_U64(count_of(a), 3);
	AP_CHECK(set_remove(&s, (void *)a, NULL));
	AP_CHECK(set_remove(&s, (void *)alias, NULL));
	AP_CHECK(set_remove(&s, (void *)(a + g - 16), NULL));
	AP_CHECK(set_remove(&s, (void *)b, NULL));
	AP_CHECK(!set_remove(&s, (void *)b, NULL));
	/* The last key out clears the whole word, its eighths' bits too. */
	uint64_t left = 0;
	for (size_t i = 0; i < SET_FILTER_SIZE; i++)
		left += filter.word[i];
	AP_CHECK_EQ_U64(left, 0);
	/* Growth copies keys, not counts: 5000 keys of 32 bytes over 40
	 * granules, 128 in each but the last. */
	for (uint64_t i = 0; i < 5000; i++)
		AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 2 * g + 32 * i), &r), 0);
	uint64_t sum = 0;
	for (uint64_t k = 0; k < 40; k++)
		sum += count_of(a + (2 + k) * g);
	AP_CHECK_EQ_U64(sum, 5000);
	AP_CHECK_EQ_U64(count_of(a + 2 * g), g / 32);
	AP_CHECK(atomic_load(&s.grows) >= 5);
}

/* How many bytes of any[] differ from the number of nonzero words among
 * their granules (what each must be). */
static size_t any_out_of_step(const set_filter *f)
{
	const size_t per = (size_t)1 << (SET_FILTER_ANY_SHIFT - SET_FILTER_SHIFT);
	size_t wrong = 0;
	for (size_t i = 0; i < SET_FILTER_ANY_SIZE; i++) {
		unsigned nonzero = 0;
		for (size_t j = 0; j < per; j++)
			nonzero += f->word[i * per + j] != 0;
		wrong += __atomic_load_n(&f->any[i], __ATOMIC_RELAXED) != nonzero;
	}
	return wrong;
}

/* p's byte of any[], with a relaxed load. */
static unsigned any_of(uintptr_t p)
{
	return __atomic_load_n(&filter.any[set_filter_any_index(p)], __ATOMIC_RELAXED);
}

_Static_assert(SET_FILTER_ANY_SHIFT == SET_FILTER_SHIFT + 1,
	       "the test below puts two granules in a byte");

AP_TEST(a_byte_of_any_counts_the_nonzero_words_of_its_granules)
{
	sampled_set s;
	memset(&filter, 0, sizeof filter);
	set_init(&s, &filter);
	const uintptr_t g = (uintptr_t)1 << SET_FILTER_SHIFT;
	const uintptr_t a = 0x7f0000000000u; /* granules 0 and 1: byte 0 */
	sample_rec r = rec_for(1);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)a, &r), 0);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 16), &r), 0);
	AP_CHECK_EQ_U64(any_of(a), 1);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + g + 64), &r), 0);
	AP_CHECK_EQ_U64(any_of(a), 2);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 2 * g), &r), 0); /* byte 1 */
	AP_CHECK_EQ_U64(any_of(a + 2 * g), 1);
	AP_CHECK(!set_filter_any(&filter, a + 4 * g));
	AP_CHECK_EQ_U64(any_out_of_step(&filter), 0);
	/* One of granule 0's two keys out: its word stays nonzero. */
	AP_CHECK(set_remove(&s, (void *)a, NULL));
	AP_CHECK_EQ_U64(any_of(a), 2);
	AP_CHECK(set_remove(&s, (void *)(a + 16), NULL));
	AP_CHECK_EQ_U64(any_of(a), 1);
	AP_CHECK(set_remove(&s, (void *)(a + g + 64), NULL));
	AP_CHECK(!set_filter_any(&filter, a));
	AP_CHECK_EQ_U64(any_of(a + 2 * g), 1);
	/* A claim over a granule a key already made nonzero counts it
	 * once, and the key's removal leaves the claimed word alone. */
	const uintptr_t c = a + 100 * g;
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(c + 32), &r), 0);
	set_filter_claim(&filter, c + 5, c + g + 1);
	AP_CHECK_EQ_U64(any_of(c), 2);
	AP_CHECK(set_filter_word(&filter, c) == UINT16_MAX &&
		 set_filter_word(&filter, c + g) == UINT16_MAX);
	AP_CHECK(set_remove(&s, (void *)(c + 32), NULL));
	AP_CHECK_EQ_U64(any_of(c), 2);
	AP_CHECK(!set_filter_any(&filter, c + 2 * g));
	AP_CHECK(set_remove(&s, (void *)(a + 2 * g), NULL));
	AP_CHECK_EQ_U64(any_out_of_step(&filter), 0);
	size_t left = 0;
	for (size_t i = 0; i < SET_FILTER_ANY_SIZE; i++)
		left += filter.any[i];
	AP_CHECK_EQ_U64(left, 2); /* the claimed two */
}

AP_TEST(the_filter_marks_the_eighths_of_a_granule_that_hold_keys)
{
	sampled_set s;
	memset(&filter, 0, sizeof filter);
	set_init(&s, &filter);
	const uintptr_t g = (uintptr_t)1 << SET_FILTER_SHIFT, e = g / 8;
	const uintptr_t a = 0x7f0000000000u;
	sample_rec r = rec_for(1);
	/* Keys in the granule's second and sixth eighths. */
	const uintptr_t k1 = a + e + 48, k2 = a + 5 * e;
	AP_CHECK_EQ_INT(set_insert(&s, (void *)k1, &r), 0);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)k2, &r), 0);
	uint16_t w = filter.word[set_filter_index(a)];
	AP_CHECK_EQ_U64(w, (0x100u << 1 | 0x100u << 5) + 2);
	/* What the runtime's rt_classify asks first: only the pointers in
	 * those two eighths can be keys, every key among them. */
	for (uintptr_t q = a; q < a + g; q += 16) {
		bool may = (w & set_filter_bit(q)) != 0;
		AP_CHECK(may == (q / e == k1 / e || q / e == k2 / e));
		if (q == k1 || q == k2)
			AP_CHECK(may && set_contains(&s, (const void *)q));
		else
			AP_CHECK(!set_contains(&s, (const void *)q));
	}
	/* A removal keeps the bits until the granule is empty: a stale bit
	 * costs a lookup, a cleared one would lose a live key. */
	AP_CHECK(set_remove(&s, (void *)k1, NULL));
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a)], (0x100u << 1 | 0x100u << 5) + 1);
	AP_CHECK(filter.word[set_filter_index(a)] & set_filter_bit(k2));
	AP_CHECK(set_remove(&s, (void *)k2, NULL));
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a)], 0);
}

AP_TEST(a_saturated_granule_counter_stays_saturated)
{
	sampled_set s;
	memset(&filter, 0, sizeof filter);
	set_init(&s, &filter);
	const uintptr_t a = 0x7f0000000000u;
	/* 256 keys of 16 bytes fill the granule: the count saturates at
	 * 255, the whole word (every eighth's bit) then at 65535. */
	sample_rec r = rec_for(1);
	for (uint64_t i = 0; i < 254; i++)
		AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 16 * i), &r), 0);
	AP_CHECK_EQ_U64(count_of(a), 254);
	AP_CHECK(filter.word[set_filter_index(a)] != UINT16_MAX);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 16 * 254), &r), 0);
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a)], UINT16_MAX);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)(a + 16 * 255), &r), 0);
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a)], UINT16_MAX);
	/* Counts past it were lost: decrementing could reach 0 while a key
	 * of the granule is live, so it never comes down. */
	for (uint64_t i = 0; i < 256; i++)
		AP_CHECK(set_remove(&s, (void *)(a + 16 * i), NULL));
	AP_CHECK_EQ_U64(filter.word[set_filter_index(a)], UINT16_MAX);
}

AP_TEST(reserved_key_values_are_refused)
{
	sampled_set s;
	set_init(&s, NULL);
	sample_rec r = rec_for(1);
	AP_CHECK_EQ_INT(set_insert(&s, NULL, &r), AP_EINVAL);
	AP_CHECK_EQ_INT(set_insert(&s, (void *)1, &r), AP_EINVAL);
	AP_CHECK(!set_remove(&s, (void *)1, NULL));
}

AP_TEST(growth_keeps_every_key_and_record)
{
	sampled_set s;
	set_init(&s, NULL);
	enum { N = 20000 };
	for (uint64_t i = 1; i <= N; i++) {
		sample_rec r = rec_for(i);
		AP_CHECK_EQ_INT(set_insert(&s, fake(1, i), &r), 0);
	}
	AP_CHECK_EQ_U64(set_size(&s), N);
	/* The load limit of 1/2 holds after growth. */
	AP_CHECK(set_capacity(&s) >= 2 * N);
	for (uint64_t i = 1; i <= N; i++) {
		sample_rec out;
		AP_CHECK(set_get(&s, fake(1, i), &out));
		AP_CHECK_EQ_U64(out.u, i);
	}
	AP_CHECK(!set_contains(&s, fake(2, 5)));
}

AP_TEST(churn_cleans_tombstones_instead_of_growing_forever)
{
	sampled_set s;
	set_init(&s, NULL);
	/* 100 live keys, a million insert/remove pairs: without clean-up the
	 * table would fill with tombstones and misses would never end. */
	for (uint64_t i = 1; i <= 100; i++) {
		sample_rec r = rec_for(i);
		AP_CHECK_EQ_INT(set_insert(&s, fake(3, i), &r), 0);
	}
	for (uint64_t i = 1000; i < 1001000; i++) {
		sample_rec r = rec_for(i);
		AP_CHECK_EQ_INT(set_insert(&s, fake(3, i), &r), 0);
		AP_CHECK(set_remove(&s, fake(3, i), NULL));
	}
	AP_CHECK_EQ_U64(set_size(&s), 100);
	AP_CHECK(set_capacity(&s) <= 1024);
	/* Removing at a cluster's end leaves no tombstone behind. */
	AP_CHECK(set_tombstones(&s) <= 100);
	for (uint64_t i = 1; i <= 100; i++)
		AP_CHECK(set_contains(&s, fake(3, i)));
	AP_CHECK(!set_contains(&s, fake(3, 5000)));
}

/* ---- 4 threads ------------------------------------------------------------ */

enum { THREADS = 4, KEYS = 3000, ROUNDS = 20 };
static sampled_set shared;
static set_filter shared_filter;

typedef struct worker_arg {
	uint64_t id;
	int errors;
	uint64_t live;
} worker_arg;

static void *worker(void *p)
{
	worker_arg *w = p;
	uint64_t t = w->id + 10;
	bool in[KEYS] = { false };
	unsigned seed = (unsigned)w->id * 2654435761u + 1;
	for (int round = 0; round < ROUNDS; round++) {
		for (uint64_t k = 0; k < KEYS; k++) {
			seed = seed * 1103515245u + 12345u;
			uint64_t i = (seed >> 8) % KEYS;
			/* 256 bytes apart: at most 16 keys of a thread in a
			 * granule, 64 of the four, so no word saturates and
			 * the counts below add up exactly. */
			const void *key = fake(t, (i + 1) * 16);
			/* Only this thread touches its keys, as only a pointer's
			 * owner frees it; lookups must always be exact. */
			if (set_contains(&shared, key) != in[i])
				w->errors++;
			/* What free() relies on: a live key's granule counts it,
			 * and its eighth's bit is set (rt_classify).
			 * The threads' keys are 4 GiB apart, so they share
			 * counters: every thread's updates must add up. (A
			 * relaxed load, as the runtime's plain one compiles to;
			 * a plain read here would be a race to TSan.) */
			if (in[i] && !(set_filter_word(&shared_filter, (uintptr_t)key) &
				       set_filter_bit((uintptr_t)key)))
				w->errors++;
			/* And free()'s own test, the byte of any[]. */
			if (in[i] && !set_filter_any(&shared_filter, (uintptr_t)key))
				w->errors++;
			if (in[i]) {
				sample_rec out;
				if (!set_remove(&shared, key, &out) || out.u != i + 1)
					w->errors++;
				in[i] = false;
			} else {
				sample_rec r = rec_for(i + 1);
				if (set_insert(&shared, key, &r) != 0)
					w->errors++;
				in[i] = true;
			}
		}
	}
	for (uint64_t i = 0; i < KEYS; i++)
		w->live += in[i];
	return NULL;
}

AP_TEST(four_threads_insert_remove_and_look_up_consistently)
{
	set_init(&shared, &shared_filter);
	pthread_t th[THREADS];
	worker_arg args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (worker_arg){ .id = (uint64_t)i };
		AP_CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
	}
	uint64_t live = 0;
	int errors = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
		live += args[i].live;
	}
	AP_CHECK_EQ_INT(errors, 0);
	AP_CHECK_EQ_U64(set_size(&shared), live);
	AP_CHECK(atomic_load(&shared.grows) >= 2);
	/* The counters add up to the live keys: every insert and remove was
	 * counted once, however the threads interleaved. */
	uint64_t counted = 0;
	for (size_t i = 0; i < SET_FILTER_SIZE; i++)
		counted += shared_filter.word[i] & SET_FILTER_COUNT;
	AP_CHECK_EQ_U64(counted, live);
	/* And every byte of any[] counts the nonzero words among its
	 * granules, whose keys were several threads'. */
	AP_CHECK_EQ_U64(any_out_of_step(&shared_filter), 0);
}

AP_TEST(removals_at_a_cluster_end_leave_no_tombstones)
{
	sampled_set s;
	set_init(&s, NULL);
	enum { N = 300 };
	for (uint64_t i = 1; i <= N; i++) {
		sample_rec r = rec_for(i);
		AP_CHECK_EQ_INT(set_insert(&s, fake(4, i), &r), 0);
	}
	/* In any order, removing everything must end with no tombstones:
	 * each cluster drains into empty slots from its end. */
	for (uint64_t i = 1; i <= N; i += 2)
		AP_CHECK(set_remove(&s, fake(4, i), NULL));
	for (uint64_t i = N; i >= 2; i -= 2)
		AP_CHECK(set_remove(&s, fake(4, i), NULL));
	AP_CHECK_EQ_U64(set_size(&s), 0);
	AP_CHECK_EQ_U64(set_tombstones(&s), 0);
	for (uint64_t i = 1; i <= N; i++)
		AP_CHECK(!set_contains(&s, fake(4, i)));
}

AP_TEST(keys_behind_a_tombstone_stay_reachable)
{
	sampled_set s;
	set_init(&s, NULL);
	/* Fill densely enough that clusters form, remove from their middles,
	 * and check every remaining key is still found by the lock-free path. */
	enum { N = 31 };
	for (uint64_t i = 1; i <= N; i++) {
		sample_rec r = rec_for(i);
		AP_CHECK_EQ_INT(set_insert(&s, fake(5, i), &r), 0);
	}
	for (uint64_t i = 1; i <= N; i += 3)
		AP_CHECK(set_remove(&s, fake(5, i), NULL));
	for (uint64_t i = 1; i <= N; i++)
		AP_CHECK_EQ_INT(set_contains(&s, fake(5, i)), (i - 1) % 3 != 0);
}
