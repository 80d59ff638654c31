// Renders a run (see run_reader.h) as one self-contained HTML page: per
// function a heatmap of intervals x log2 rows with p50/p95/p99 lines, lost
// calls and mode changes on the time axis, the total histogram and a summary
// table. Inline SVG and CSS only: no script, no network. Pure: no I/O.
#pragma once

#include <string>

#include "offline/run_reader.h"

namespace funclatency::offline {

struct HtmlOptions {
  // More intervals than this are summed into this many columns.
  size_t max_columns = 600;
  std::string title;  // default: the run's file name
};

std::string render_html(const Run& run, const HtmlOptions& options = {});

}  // namespace funclatency::offline
