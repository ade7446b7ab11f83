#ifndef DEFAULTS_TEST_ISOLATION_H
#define DEFAULTS_TEST_ISOLATION_H

/// The folder this test process made its HOME, XDG_CONFIG_HOME and TMPDIR, removed when the process exits; NULL if it
/// could not be made (the environment is then left as it was).
const char *_Nullable defaults_test_isolation_folder(void);

/// A folder every user can reach, for tests run as root that hand folders to another user: the run's TMPDIR when
/// everyone may pass through every folder above it, else a folder of this run in /tmp, removed when the process
/// exits. NULL if it could not be made.
const char *_Nullable defaults_test_shared_folder(void);

/// What HOME, XDG_CONFIG_HOME and TMPDIR were when the process started (NULL when unset).
const char *_Nullable defaults_test_original_home(void);
const char *_Nullable defaults_test_original_config_home(void);
const char *_Nullable defaults_test_original_temporary_folder(void);

#endif
