/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_libs.c: what the doctor needs to know of the node's communication libraries on EFA
 * nodes: the NCCL NET plugin NCCL would load (found by NCCL's naming rules, loaded to see that
 * it loads, its network name, API versions and package version), libfabric (its version) and
 * the text of `fi_info -p efa` (parsed here). On the live machine the dynamic loader's own
 * search finds them and fi_info is run; for a fixture or another machine the doctor takes a
 * list of directories and a saved fi_info text instead, and runs nothing. Not the rules: those
 * are in topo_efa.c.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

#define SHARC_LIBS_MAX_FILE    (64u << 20) /* bytes of a plugin scanned for its version */
#define SHARC_LIBS_MAX_FI_INFO (1u << 20)  /* bytes of fi_info output kept */
#define SHARC_LIBS_FI_INFO_S   20          /* seconds fi_info may take */

extern char **environ;

/* ---- parsers (fuzzed by tests/fuzz/fuzz_fi_info.c) */

/* One "key: value" line of fi_info's output, trimmed; 0 when the line is not of that form. */
static int sharc_fi_line(const char *line, size_t len, char *key, size_t ksize, char *value,
                         size_t vsize)
{
    const char *colon = memchr(line, ':', len), *v;
    size_t klen, vlen;

    if (colon == NULL) {
        return 0;
    }
    while (len > 0 && isspace((unsigned char)*line)) {
        line++;
        len--;
    }
    klen = (size_t)(colon - line);
    while (klen > 0 && isspace((unsigned char)line[klen - 1])) {
        klen--;
    }
    v = colon + 1;
    vlen = len - (size_t)(v - line);
    while (vlen > 0 && isspace((unsigned char)*v)) {
        v++;
        vlen--;
    }
    while (vlen > 0 && isspace((unsigned char)v[vlen - 1])) {
        vlen--;
    }
    if (klen == 0 || klen >= ksize) {
        return 0;
    }
    snprintf(key, ksize, "%.*s", (int)klen, line);
    snprintf(value, vsize, "%.*s", (int)SHARC_MIN(vlen, vsize - 1), v);
    return 1;
}

/*
 * The text of `fi_info -p efa`: blocks that open with "provider: efa" and go on with indented
 * "fabric:", "domain:", "version:", "type:", "protocol:" lines; or an error such as
 * "fi_getinfo: -61 (No data available)" when libfabric has no such provider. The efa
 * provider's version is libfabric's as major * 100 + minor ("122.0" is 1.22, "203.0" 2.3).
 */
void sharc_topo_parse_fi_info(const char *text, size_t len, sharc_topo_fi_info_t *info)
{
    const char *p = text, *end = text + len;
    char domain[64] = "", seen[SHARC_TOPO_MAX_NICS][64];
    int in_efa = 0, block_rdm = 0; /* in an efa entry; that entry counted as RDM */
    size_t dlen = 0;

    memset(info, 0, sizeof(*info));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t llen = (nl != NULL) ? (size_t)(nl - p) : (size_t)(end - p);
        char key[32], value[128];

        if (llen >= 10 && memcmp(p, "fi_getinfo", 10) == 0 && info->error[0] == '\0') {
            snprintf(info->error, sizeof(info->error), "%.*s", (int)SHARC_MIN(llen, 127), p);
            for (char *c = info->error; *c != '\0'; c++) {
                *c = isprint((unsigned char)*c) ? *c : '?';
            }
        } else if (sharc_fi_line(p, llen, key, sizeof(key), value, sizeof(value))) {
            for (char *c = value; *c != '\0'; c++) {
                *c = isprint((unsigned char)*c) ? *c : '?';
            }
            if (strcmp(key, "provider") == 0) {
                info->nentries++;
                /* "efa", or a layered "efa;ofi_rxd" that still runs on the device */
                in_efa = strncasecmp(value, "efa", 3) == 0 && (value[3] == '\0' || value[3] == ';');
                info->nefa += in_efa;
                domain[0] = '\0';
                block_rdm = 0;
            } else if (in_efa && strcmp(key, "domain") == 0) {
                snprintf(domain, sizeof(domain), "%.63s", value);
            } else if (in_efa && strcmp(key, "version") == 0) {
                char *dot;
                long v = strtol(value, &dot, 10);

                if (dot != value && (*dot == '.' || *dot == '\0') && v >= 100 && v < 10000) {
                    info->major = (int)(v / 100);
                    info->minor = (int)(v % 100);
                }
            } else if (in_efa && !block_rdm && strcmp(key, "type") == 0 &&
                       strcmp(value, "FI_EP_RDM") == 0) {
                int dup = 0;

                block_rdm = 1;
                info->nrdm++;
                for (int d = 0; d < info->ndomains && !dup; d++) {
                    dup = strcmp(seen[d], domain) == 0;
                }
                if (!dup && domain[0] != '\0' && info->ndomains < SHARC_TOPO_MAX_NICS) {
                    memcpy(seen[info->ndomains++], domain, sizeof(domain));
                    if (dlen < sizeof(info->domains)) {
                        dlen += (size_t)snprintf(info->domains + dlen, sizeof(info->domains) - dlen,
                                                 "%s%s", dlen > 0 ? ", " : "", domain);
                    }
                }
            }
        }
        p += llen + (nl != NULL);
    }
}

/*
 * The package version a NET plugin carries in its text: aws-ofi-nccl logs "Initializing
 * aws-ofi-nccl 1.13.2-aws" at start, from one string in the library. Other plugins report
 * none; *out is then "".
 */
void sharc_topo_plugin_version(const char *bytes, size_t len, char *out, size_t size)
{
    static const char tag[] = "aws-ofi-nccl ";
    const size_t tlen = sizeof(tag) - 1;

    out[0] = '\0';
    for (size_t i = 0; i + tlen < len; i++) {
        const char *hit = memchr(bytes + i, 'a', len - i);
        size_t n = 0;

        if (hit == NULL) {
            return;
        }
        i = (size_t)(hit - bytes);
        if (i + tlen >= len || memcmp(hit, tag, tlen) != 0 ||
            !(isdigit((unsigned char)hit[tlen]) ||
              (i + tlen + 4 <= len && memcmp(hit + tlen, "git-", 4) == 0))) {
            continue;
        }
        while (i + tlen + n < len && n + 1 < size && n < 40 && hit[tlen + n] != '\0' &&
               (isalnum((unsigned char)hit[tlen + n]) || strchr("._+-", hit[tlen + n]) != NULL)) {
            n++;
        }
        snprintf(out, size, "%.*s", (int)n, hit + tlen);
        return;
    }
}

/* ---- finding and loading libraries */

/* @p name in the colon-separated @p dirs: the first that exists, into @p out. */
static int sharc_libs_search(const char *dirs, const char *name, char *out, size_t size)
{
    for (const char *p = dirs; *p != '\0';) {
        size_t len = strcspn(p, ":");
        struct stat st;

        if (len > 0 && sharc_snprintf(out, size, "%.*s/%s", (int)len, p, name) == 0 &&
            stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
            return 0;
        }
        p += len + (p[len] == ':');
    }
    return -1;
}

/* dlerror() made printable and short. */
static void sharc_libs_dlerror(char *out, size_t size)
{
    const char *err = dlerror();

    snprintf(out, size, "%s", err != NULL ? err : "unknown error");
    for (char *c = out; *c != '\0'; c++) {
        *c = isprint((unsigned char)*c) ? *c : '?';
    }
}

/*
 * Open library @p name as the process that needs it would: by the dynamic loader's search
 * (live machine) or, with @p dirs, from the first of those directories that holds it. Its
 * own dependencies are resolved by the loader either way. Returns the handle, or NULL with
 * *found_p saying whether the file exists (so that a library that fails to load is told from
 * one that is absent) and the loader's message in @p error.
 */
static void *sharc_libs_open(const char *dirs, const char *name, int *found_p, char *file,
                             size_t fsize, char *error, size_t esize)
{
    struct link_map *map = NULL;
    void *handle;

    *found_p = 0;
    file[0] = error[0] = '\0';
    if (strchr(name, '/') != NULL) {
        struct stat st;

        *found_p = stat(name, &st) == 0;
        snprintf(file, fsize, "%s", name);
    } else if (dirs != NULL) {
        if (sharc_libs_search(dirs, name, file, fsize) != 0) {
            snprintf(error, esize, "%s: not in %s", name, dirs);
            return NULL;
        }
        *found_p = 1;
    }
    /* RTLD_NOW as NCCL does: an unresolved symbol fails here, not in the middle of a job.
     * Handles stay open: NCCL keeps its plugin loaded too, and the report ends soon after. */
    handle = dlopen(file[0] != '\0' ? file : name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        sharc_libs_dlerror(error, esize);
        if (dirs == NULL && strchr(name, '/') == NULL) {
            /* the loader's search: "NAME: cannot open shared object file: No such file" is
             * absence (NCCL's own test); the same about a dependency is a load failure */
            *found_p = !(strstr(error, name) != NULL && strstr(error, "No such file") != NULL);
        }
        return NULL;
    }
    *found_p = 1;
    if (file[0] == '\0' && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL &&
        map->l_name != NULL) {
        snprintf(file, fsize, "%s", map->l_name);
    }
    return handle;
}

/* The NET plugin's network name, API versions (ncclNetPlugin_vN) and package version. */
static void sharc_libs_plugin_info(void *handle, sharc_topo_libs_t *libs)
{
    char *bytes;
    size_t len;

    /* every ncclNet_vN_t begins with "const char *name" */
    for (int v = 2; v <= 20; v++) {
        char sym[32];
        const char *const *net;

        snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
        net = dlsym(handle, sym);
        if (net == NULL) {
            continue;
        }
        if (libs->plugin.api_min == 0) {
            libs->plugin.api_min = v;
        }
        libs->plugin.api_max = v;
        if (*net != NULL) {
            snprintf(libs->plugin.name, sizeof(libs->plugin.name), "%.63s", *net);
        }
    }
    for (char *c = libs->plugin.name; *c != '\0'; c++) {
        *c = isprint((unsigned char)*c) ? *c : '?';
    }
    if (libs->plugin.file[0] != '\0' &&
        sharc_topo_read_file(libs->plugin.file, SHARC_LIBS_MAX_FILE, &bytes, &len) == SHARC_OK) {
        sharc_topo_plugin_version(bytes, len, libs->plugin.version, sizeof(libs->plugin.version));
        free(bytes);
    }
}

/* Whether @p name is a library name NCCL takes as it is (a path, or "lib*.so"). */
static int sharc_libs_full_name(const char *name)
{
    size_t len = strlen(name);

    return strchr(name, '/') != NULL ||
           (strncmp(name, "lib", 3) == 0 && len >= 3 && strcmp(name + len - 3, ".so") == 0);
}

static void sharc_libs_tried(sharc_topo_libs_t *libs, const char *name)
{
    size_t len = strlen(libs->plugin.tried);

    if (len < sizeof(libs->plugin.tried)) {
        (void)sharc_snprintf(libs->plugin.tried + len, sizeof(libs->plugin.tried) - len, "%s%s",
                             len > 0 ? ", " : "", name); /* a long list is cut short */
    }
}

/*
 * The NET plugin NCCL would load: NCCL_NET_PLUGIN's entries in order (a comma-separated
 * list; each tried as given, then as libnccl-net-<entry>.so unless it is a path or a full
 * library name), else libnccl-net.so; "none" loads none. The first that loads is NCCL's.
 */
static void sharc_libs_find_plugin(const sharc_topo_libs_opts_t *opts, sharc_topo_libs_t *libs)
{
    const char *value = opts->net_plugin;
    char list[256], *save = NULL, error[256] = "";

    if (value != NULL && strcasecmp(value, "none") == 0) {
        libs->plugin.disabled = 1;
        return;
    }
    snprintf(list, sizeof(list), "%s", value != NULL && *value != '\0' ? value : "libnccl-net.so");
    for (char *entry = strtok_r(list, ",", &save); entry != NULL;
         entry = strtok_r(NULL, ",", &save)) {
        char names[2][160];
        int nnames = 1;

        snprintf(names[0], sizeof(names[0]), "%s", entry);
        if (!sharc_libs_full_name(entry)) {
            snprintf(names[1], sizeof(names[1]), "libnccl-net-%.120s.so", entry);
            nnames = 2;
        }
        for (int n = 0; n < nnames; n++) {
            char file[SHARC_TOPO_PATH_MAX], err[256];
            int found;
            void *handle = sharc_libs_open(opts->lib_path, names[n], &found, file, sizeof(file),
                                           err, sizeof(err));

            sharc_libs_tried(libs, names[n]);
            if (found && !libs->plugin.found) {
                libs->plugin.found = 1;
                snprintf(libs->plugin.file, sizeof(libs->plugin.file), "%s", file);
                snprintf(error, sizeof(error), "%s", err);
            }
            if (handle != NULL) {
                libs->plugin.loads = 1;
                snprintf(libs->plugin.file, sizeof(libs->plugin.file), "%s", file);
                sharc_libs_plugin_info(handle, libs);
                return;
            }
        }
    }
    snprintf(libs->plugin.error, sizeof(libs->plugin.error), "%s", error);
}

/*
 * Where NCCL finds no plugin by its default name, the aws-ofi-nccl plugin may still be there
 * under the names its newer packages use (libnccl-net-ofi.so, libnccl-net-aws-ofi.so): NCCL
 * loads it with NCCL_NET_PLUGIN set to the suffix.
 */
static void sharc_libs_find_other(const sharc_topo_libs_opts_t *opts, sharc_topo_libs_t *libs)
{
    static const char *const suffixes[] = {"ofi", "aws-ofi"};

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(suffixes); i++) {
        char name[64], file[SHARC_TOPO_PATH_MAX], err[256];
        int found;

        snprintf(name, sizeof(name), "libnccl-net-%s.so", suffixes[i]);
        (void)sharc_libs_open(opts->lib_path, name, &found, file, sizeof(file), err, sizeof(err));
        if (found) {
            snprintf(libs->plugin.other, sizeof(libs->plugin.other), "%s", file);
            snprintf(libs->plugin.other_suffix, sizeof(libs->plugin.other_suffix), "%s",
                     suffixes[i]);
            return;
        }
    }
}

/* libfabric: where it is, whether it loads, fi_version(). */
static void sharc_libs_find_fabric(const sharc_topo_libs_opts_t *opts, sharc_topo_libs_t *libs)
{
    static const char *const names[] = {"libfabric.so.1", "libfabric.so"};

    for (size_t i = 0; i < SHARC_ARRAY_SIZE(names) && !libs->fabric.found; i++) {
        int found;
        void *handle = sharc_libs_open(opts->lib_path, names[i], &found, libs->fabric.file,
                                       sizeof(libs->fabric.file), libs->fabric.error,
                                       sizeof(libs->fabric.error));
        uint32_t (*version)(void);

        libs->fabric.found = found;
        if (handle == NULL) {
            continue;
        }
        libs->fabric.loads = 1;
        *(void **)&version = dlsym(handle, "fi_version");
        if (version != NULL) {
            uint32_t v = version(); /* FI_VERSION(major, minor): major << 16 | minor */

            libs->fabric.major = (int)(v >> 16);
            libs->fabric.minor = (int)(v & 0xffff);
        }
    }
}

/* The full path of @p tool in $PATH, or -1. */
static int sharc_libs_which(const char *tool, char *out, size_t size)
{
    const char *path = getenv("PATH");

    if (path == NULL) {
        return -1;
    }
    for (const char *p = path; *p != '\0';) {
        size_t len = strcspn(p, ":");

        if (len > 0 && sharc_snprintf(out, size, "%.*s/%s", (int)len, p, tool) == 0 &&
            access(out, X_OK) == 0) {
            return 0;
        }
        p += len + (p[len] == ':');
    }
    return -1;
}

/*
 * Run `fi_info -p efa` (stdout and stderr, where it reports a missing provider) with a time
 * limit; its text goes to *text_p (to free). Returns 0, or -1 when it could not be run.
 */
static int sharc_libs_run_fi_info(const char *tool, char **text_p, size_t *len_p)
{
    char *const argv[] = {(char *)tool, "-p", "efa", NULL};
    posix_spawn_file_actions_t actions;
    struct timespec start, now;
    size_t len = 0;
    int fds[2], status, rc;
    char *text;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        return -1;
    }
    text = malloc(SHARC_LIBS_MAX_FI_INFO + 1);
    if (text == NULL) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    rc = posix_spawn(&pid, tool, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        free(text);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        ssize_t n;

        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= SHARC_LIBS_FI_INFO_S) {
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&pfd, 1, 1000) <= 0) {
            continue;
        }
        n = read(fds[0], text + len, SHARC_LIBS_MAX_FI_INFO - len);
        if (n <= 0) {
            break; /* end of output (or an error: what came is what there is) */
        }
        len += (size_t)n;
        if (len == SHARC_LIBS_MAX_FI_INFO) {
            break;
        }
    }
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    text[len] = '\0';
    *text_p = text;
    *len_p = len;
    return 0;
}

static void sharc_libs_fi_info(const sharc_topo_libs_opts_t *opts, sharc_topo_libs_t *libs)
{
    char tool[SHARC_TOPO_PATH_MAX], *text = NULL;
    size_t len = 0;

    if (opts->fi_info != NULL) {
        if (sharc_topo_read_file(opts->fi_info, SHARC_LIBS_MAX_FI_INFO, &text, &len) != SHARC_OK) {
            return; /* said by the reader; the library check stands in */
        }
        snprintf(libs->fi.source, sizeof(libs->fi.source), "%s", opts->fi_info);
    } else if (!opts->live || sharc_libs_which("fi_info", tool, sizeof(tool)) != 0 ||
               sharc_libs_run_fi_info(tool, &text, &len) != 0) {
        return;
    } else {
        (void)sharc_snprintf(libs->fi.source, sizeof(libs->fi.source), "%s -p efa", tool);
    }
    libs->fi.have = 1;
    sharc_topo_parse_fi_info(text, len, &libs->fi.info);
    free(text);
}

void sharc_topo_probe_libs(const sharc_topo_libs_opts_t *opts, sharc_topo_libs_t *libs)
{
    memset(libs, 0, sizeof(*libs));
    if (!opts->live && opts->lib_path == NULL && opts->fi_info == NULL) {
        return; /* another machine's libraries: not this one's to look at */
    }
    libs->probed = 1;
    snprintf(libs->where, sizeof(libs->where), "%s",
             opts->lib_path != NULL ? opts->lib_path : "the dynamic loader's search path");
    if (opts->lib_path != NULL || opts->live) {
        libs->searched = 1;
        sharc_libs_find_plugin(opts, libs);
        if (!libs->plugin.loads && !libs->plugin.disabled) {
            sharc_libs_find_other(opts, libs);
        }
        if (opts->efa) {
            sharc_libs_find_fabric(opts, libs);
        }
    }
    if (opts->efa) {
        sharc_libs_fi_info(opts, libs);
    }
}
