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

// A waterfall: a start bar (e.g. the ideal step), steps that add to it (each floating where the
// last ended), and the end bar they reach (e.g. the measured step).
std::string waterfall(const std::string& title, const std::pair<std::string, double>& start,
                      const std::vector<std::pair<std::string, double>>& steps, const std::string& endLabel,
                      const std::string& unit);
// A heat map: values[i][j] of row i (rowLabels) and column j (columnLabels), shaded from 0 to the
// largest value.
std::string heatMap(const std::string& title, const std::vector<std::string>& rowLabels,
                    const std::vector<std::string>& columnLabels, const std::vector<std::vector<double>>& values,
                    const std::string& unit);

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
