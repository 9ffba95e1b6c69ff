/* WARPLAB_HIDDEN marks a symbol that the C files of one extension module share: it links
 * between them and stays out of the process's global symbol namespace (ELF and Mach-O
 * visibility; elsewhere a symbol is not exported unless it asks to be). Used by
 * launch_driver.h and hostcopy_pairs.h. */
#ifndef WARPLAB_HIDDEN_H
#define WARPLAB_HIDDEN_H

#if defined(__GNUC__)
#define WARPLAB_HIDDEN __attribute__((visibility("hidden")))
#else
#define WARPLAB_HIDDEN
#endif

#endif
