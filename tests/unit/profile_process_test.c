/*
 * profile_process_test.c: the process identity comment of a heap profile
 * (ap_profile_set_process / ap_profile_get_process, src/lib/
 * profile_process.c): written and read back, corrupt or absent comments
 * give clear codes, bad boot ids are refused. (Through the runtime and
 * the CLI: tests/integration/process_dumps_test.sh.)
 */
#include <string.h>

#include "allocprof/profile.h"
#include "aptest.h"

static ap_profile *heap(void)
{
	ap_profile *p = NULL;
	if (ap_profile_create(NULL, &p) || ap_profile_init_heap(p, 4096)) {
		ap_profile_destroy(p);
		return NULL;
	}
	return p;
}

AP_TEST(identity_round_trips)
{
	ap_profile *p = heap();
	AP_CHECK(p);
	ap_process_id id = {.pid = 4242, .start_ns = 1700000000123456789ULL,
			    .seq = 7};
	strcpy(id.boot_id, "0b7c5a1e-3f3a-4c8e-9d1b-2a6f5e4d3c2b");
	AP_CHECK_EQ_INT(ap_profile_set_process(p, &id), 0);
	ap_process_id back;
	AP_CHECK_EQ_INT(ap_profile_get_process(p, &back), 0);
	AP_CHECK(back.pid == 4242 && back.start_ns == id.start_ns &&
		 back.seq == 7 && !strcmp(back.boot_id, id.boot_id));
	AP_CHECK(ap_process_same(&id, &back));
	back.start_ns++;
	AP_CHECK(!ap_process_same(&id, &back));
	ap_profile_destroy(p);
}

AP_TEST(absent_corrupt_and_bad_ids)
{
	ap_profile *p = heap();
	AP_CHECK(p);
	ap_process_id id;
	AP_CHECK_EQ_INT(ap_profile_get_process(p, &id), AP_ENOTFOUND);
	AP_CHECK_EQ_INT(ap_profile_add_comment(p, AP_COMMENT_PROCESS_PREFIX
					       "pid=1;start=x;boot=;seq=1"), 0);
	AP_CHECK_EQ_INT(ap_profile_get_process(p, &id), AP_ECORRUPT);
	ap_profile_destroy(p);
	p = heap();
	AP_CHECK(p);
	memset(&id, 0, sizeof id);
	strcpy(id.boot_id, "a;b");
	AP_CHECK_EQ_INT(ap_profile_set_process(p, &id), AP_EINVAL);
	memset(id.boot_id, 'a', sizeof id.boot_id); /* no terminator */
	AP_CHECK_EQ_INT(ap_profile_set_process(p, &id), AP_EINVAL);
	ap_profile_destroy(p);
}
