/* The C build: no exception tables, so funclatency uses return probes. */
void robust_keep_exception_tables(int argc) {
  (void)argc;
}
