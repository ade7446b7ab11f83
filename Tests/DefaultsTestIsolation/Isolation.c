// Runs before any test code, so that nothing the tests do (the standard store, `UserDefaults.standard`, temporary
// folders) reaches the real home folder or leaves anything in the real temporary folder.
//
// A C constructor because Swift has no code that runs before `main`, and the standard store and Foundation read
// HOME, XDG_CONFIG_HOME and TMPDIR once, at first use, from wherever that is. The folder
// `$TMPDIR/DefaultsTests-run-<pid>` becomes HOME (with .config inside as XDG_CONFIG_HOME) and TMPDIR; child
// processes inherit it. It is removed when the process exits; a run that crashed leaves it behind, and the next run
// removes it once its process is gone. Run as root with a TMPDIR other users cannot reach, it also makes
// `/tmp/DefaultsTests-shared-<pid>-…` for the folders tests hand to other users (see make_shared_folder).
#define _GNU_SOURCE
#include "DefaultsTestIsolation.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char isolation_folder[PATH_MAX];
static char shared_folder[PATH_MAX];
static char *original_home;
static char *original_config_home;
static char *original_temporary_folder;
static pid_t owner;

const char *defaults_test_isolation_folder(void) { return isolation_folder[0] ? isolation_folder : NULL; }
const char *defaults_test_shared_folder(void) { return shared_folder[0] ? shared_folder : NULL; }
const char *defaults_test_original_home(void) { return original_home; }
const char *defaults_test_original_config_home(void) { return original_config_home; }
const char *defaults_test_original_temporary_folder(void) { return original_temporary_folder; }

static char *copy_of(const char *text) { return text ? strdup(text) : NULL; }

static int remove_entry(const char *path, const struct stat *status, int type, struct FTW *position) {
	(void)status;
	(void)type;
	(void)position;
	remove(path);
	return 0;
}

// FTW_PHYS: a link is removed, never followed; FTW_DEPTH: a folder's entries go before the folder.
static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static const char *const run_prefix = "DefaultsTests-run-";
static const char *const shared_prefix = "DefaultsTests-shared-";

static void remove_isolation_folder(void) {
	// A child forked from this process (before exec) must not remove its parent's folders.
	if (getpid() != owner) {
		return;
	}
	if (isolation_folder[0]) {
		remove_tree(isolation_folder);
	}
	// The shared folder is the isolation folder's `tmp` when everyone can reach that, removed above.
	if (shared_folder[0] && strncmp(shared_folder, isolation_folder, strlen(isolation_folder)) != 0) {
		remove_tree(shared_folder);
	}
}

// Folders of earlier runs whose process is gone.
static void remove_leftovers(const char *temporary_folder, const char *prefix) {
	DIR *folder = opendir(temporary_folder);
	if (!folder) {
		return;
	}
	struct dirent *entry;
	while ((entry = readdir(folder))) {
		if (strncmp(entry->d_name, prefix, strlen(prefix)) != 0) {
			continue;
		}
		// <prefix><pid>-<mkdtemp's six characters>
		char *end;
		long pid = strtol(entry->d_name + strlen(prefix), &end, 10);
		// Alive, or not ours to ask about: left alone.
		if (*end != '-' || strlen(end) != 7 || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
			continue;
		}
		char path[PATH_MAX];
		struct stat status;
		// Only a real folder of this user: never a link, and never another user's run (CI runs as root).
		if (snprintf(path, sizeof path, "%s/%s", temporary_folder, entry->d_name) < (int)sizeof path
			&& lstat(path, &status) == 0 && S_ISDIR(status.st_mode) && status.st_uid == geteuid()) {
			remove_tree(path);
		}
	}
	closedir(folder);
}

// Whether every user may pass through `path` and each folder above it (search permission for others).
static int everyone_can_reach(const char *path) {
	char partial[PATH_MAX];
	if (snprintf(partial, sizeof partial, "%s", path) >= (int)sizeof partial) {
		return 0;
	}
	for (;;) {
		struct stat status;
		if (stat(partial, &status) != 0 || !(status.st_mode & S_IXOTH)) {
			return 0;
		}
		char *slash = strrchr(partial, '/');
		if (!slash || strcmp(partial, "/") == 0) {
			return 1;
		}
		slash[slash == partial ? 1 : 0] = '\0';
	}
}

// Tests run as root hand folders to other users (a temporary user, `nobody`), who must reach them. The run's
// temporary folder serves when everyone can pass through every folder above it. A private TMPDIR (`mktemp -d` as root
// makes one of mode 0700) is not made any less private: those folders go into a folder of this run in /tmp instead,
// made and removed like the run's own.
static void make_shared_folder(const char *temporary) {
	if (geteuid() != 0 || everyone_can_reach(temporary)) {
		strcpy(shared_folder, temporary);
		return;
	}
	remove_leftovers("/tmp", shared_prefix);
	char folder[PATH_MAX];
	if (snprintf(folder, sizeof folder, "/tmp/%s%d-XXXXXX", shared_prefix, (int)owner) < (int)sizeof folder
		&& mkdtemp(folder) && chmod(folder, 0755) == 0) {
		strcpy(shared_folder, folder);
	}
}

__attribute__((constructor)) static void isolate_test_process(void) {
	original_home = copy_of(getenv("HOME"));
	original_config_home = copy_of(getenv("XDG_CONFIG_HOME"));
	original_temporary_folder = copy_of(getenv("TMPDIR"));
	const char *given = original_temporary_folder && original_temporary_folder[0] ? original_temporary_folder : "/tmp";
	// An absolute path without links, so that HOME is absolute and compares as a prefix of the paths under it.
	char temporary_folder[PATH_MAX];
	if (!realpath(given, temporary_folder)) {
		return;
	}
	remove_leftovers(temporary_folder, run_prefix);

	owner = getpid();
	char folder[PATH_MAX], config[PATH_MAX], temporary[PATH_MAX];
	// mkdtemp makes a new folder, 0700, or fails: never one that somebody made beforehand under a guessable name.
	if (snprintf(folder, sizeof folder, "%s/%s%d-XXXXXX", temporary_folder, run_prefix, (int)owner)
			>= (int)sizeof folder
		|| !mkdtemp(folder)
		|| snprintf(config, sizeof config, "%s/.config", folder) >= (int)sizeof config
		|| snprintf(temporary, sizeof temporary, "%s/tmp", folder) >= (int)sizeof temporary) {
		return;
	}
	// The temporary folder stands in for /tmp, so it is like /tmp: every user may make files there (tests make
	// folders owned by other users, which the store as root may touch only as those users could), and the run's
	// folder above it can be passed through. The configuration folder stays private, as ~/.config is.
	if (chmod(folder, 0755) != 0 || mkdir(config, 0700) != 0 || mkdir(temporary, 0700) != 0
		|| chmod(temporary, 01777) != 0) {
		return;
	}
	strcpy(isolation_folder, folder);
	make_shared_folder(temporary);
	atexit(remove_isolation_folder);
	setenv("HOME", folder, 1);
	setenv("XDG_CONFIG_HOME", config, 1);
	setenv("TMPDIR", temporary, 1);
}
