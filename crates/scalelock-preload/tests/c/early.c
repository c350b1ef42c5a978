/* Checks that early_lib.so's constructor (locks before any constructor of ours) succeeded. */
#include "check.h"

int main(void) {
    check_interposition();
    int *flag = dlsym(RTLD_DEFAULT, "early_ok");
    CHECK(flag != NULL);
    CHECK_EQ(*flag, 1);
    ok("locks in a constructor that runs before the library's");
    return 0;
}
