# SPDX-License-Identifier: BSD-3-Clause
# SHARC_CHECK_XXHASH: xxHash (xxhash.h, libxxhash), the checksums of the shard engine's
# checkpoints. Sets XXHASH_* and HAVE_XXHASH.
AC_DEFUN([SHARC_CHECK_XXHASH], [
    SHARC_CHECK_PKG([xxhash], [XXHASH], [libxxhash], [xxhash.h], [XXH3_64bits], [-lxxhash])
])
