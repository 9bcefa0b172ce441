#!/bin/sh
# Generate configure and Makefile.in from configure.ac and Makefile.am.
# SPDX-License-Identifier: BSD-3-Clause
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf --install --force --warnings=all,no-portability
