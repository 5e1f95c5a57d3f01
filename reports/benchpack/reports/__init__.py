"""benchpack.reports: SQL views, statistics and renderers over the run store."""
