"""The causes of msprof warnings that one run's files can each give (``Trace.warn``'s
``cause``, RunMeta.causes): a run of many files says each once on the terminal, every file's
warning in full in ``info`` and the summary."""

CUT_SHORT = "files cut short (an excerpt or a partial copy; what each holds is converted)"
RAGGED_ROWS = "CSV rows whose number of cells differs from the header's"
SCIENTIFIC_TIMES = ("timestamps in scientific notation (a spreadsheet round trip dropped their "
                    "digits)")
FLOWS_NOT_DRAWN = ("flow events the export holds without a partner or without a slice at an "
                   "end (not drawn)")
NOT_READ = "files of the run that could not be read"
