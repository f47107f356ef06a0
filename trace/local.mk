# trace: files of this folder, included by the top-level Makefile.am.
