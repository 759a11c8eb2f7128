"""Other tools' file formats read into dsasim and written from it (ZigZag, Timeloop, ...): one module per format."""
