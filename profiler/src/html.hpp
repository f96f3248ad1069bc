#pragma once
// Self-contained HTML pages with inline CSS and SVG charts (no scripts, no network): the
// renderers of report.html and `ddprof compare --format html` (docs/report-html.md). Every
// number a chart draws is also in the SVG as text: a label, a <title> tooltip and data-v.

#include <string>
#include <utility>
#include <vector>

namespace ddp::profiler::html {

std::string escape(const std::string& text);

struct Series {
  std::string label;
  std::vector<double> values;  // NaN: no point
};

// Horizontal bars, one per item, labelled with the value.
std::string barChart(const std::string& title, const std::vector<std::pair<std::string, double>>& items,
                     const std::string& unit);
// One horizontal stacked bar per row (e.g. a rank), one segment per category (e.g. a phase).
std::string stackedBars(const std::string& title, const std::vector<std::string>& categories,
                        const std::vector<Series>& rows, const std::string& unit);
// Lines over shared x values; logX: x are byte sizes, on a log scale, labelled 1K, 1M, ... dashed:
// series drawn dashed (e.g. "ideal").
std::string lineChart(const std::string& title, const std::vector<double>& xs, const std::vector<Series>& series,
                      const std::string& xLabel, const std::string& yLabel, bool logX = false,
                      const std::vector<std::string>& dashed = {});
// A coloured grid: cells[i][j] names the class of row i, column j ("" for none); legend gives
// each class its colour index.
std::string grid(const std::string& title, const std::vector<std::string>& labels,
                 const std::vector<std::vector<std::string>>& cells, const std::vector<std::string>& classes);

class Page {
 public:
  explicit Page(std::string title);
  void heading(int level, const std::string& text);
  void paragraph(const std::string& text);
  void raw(const std::string& markup);
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  std::string finish() const;

 private:
  std::string title_, body_;
};

}  // namespace ddp::profiler::html
