#include "render/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddp::profiler::html {
namespace {

// Distinguishable in light and dark themes (Okabe-Ito, colour-blind safe).
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#F0E442", "#999999"};
constexpr size_t kColours = sizeof kPalette / sizeof kPalette[0];
const char* colour(size_t i) { return kPalette[i % kColours]; }

std::string num(double v) {
  if (std::isnan(v)) return "-";
  if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-3)) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2f}", v);
}

// Axis ticks: whole numbers without decimals.
std::string tick(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// Byte sizes: 1K, 64K, 1M, 4G.
std::string sizeTick(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return tick(std::round(v * 10) / 10) + units[u];
}

constexpr int kWidth = 720, kLeft = 150, kRight = 70, kRow = 22;

std::string svgOpen(const std::string& title, int height) {
  return fmt::format(
      "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
      "viewBox=\"0 0 {} {}\" width=\"100%\" font-size=\"12\" fill=\"currentColor\">",
      escape(title), kWidth, height);
}

std::string legend(const std::vector<std::string>& names, int y) {
  std::string out;
  int x = kLeft;
  for (size_t i = 0; i < names.size(); ++i) {
    out +=
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                    x, y, colour(i), x + 14, y + 9, escape(names[i]));
    x += 24 + static_cast<int>(names[i].size()) * 7;
  }
  return out;
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string barChart(const std::string& title, const std::vector<std::pair<std::string, double>>& items,
                     const std::string& unit) {
  double top = 0;
  for (const auto& [label, v] : items) top = std::max(top, v);
  const int height = static_cast<int>(items.size()) * kRow + 10;
  std::string out = svgOpen(title, height);
  const double scale = top > 0 ? (kWidth - kLeft - kRight) / top : 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& [label, v] = items[i];
    const int y = 5 + static_cast<int>(i) * kRow;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + 13, escape(label));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" data-v=\"{}\"><title>{}: {} "
        "{}</title></rect>",
        kLeft, y, v * scale, kRow - 6, colour(i), num(v), escape(label), num(v), escape(unit));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}</text>", kLeft + v * scale + 4, y + 13, num(v), escape(unit));
  }
  return out + "</svg></figure>\n";
}

std::string waterfall(const std::string& title, const std::pair<std::string, double>& start,
                      const std::vector<std::pair<std::string, double>>& steps, const std::string& endLabel,
                      const std::string& unit) {
  double end = start.second;
  for (const auto& [label, v] : steps) end += v;
  const double top = std::max(end, start.second);
  const int height = static_cast<int>(steps.size() + 2) * kRow + 10;
  const double scale = top > 0 ? (kWidth - kLeft - kRight) / top : 0;
  std::string out = svgOpen(title, height);
  auto bar = [&](size_t row, const std::string& label, double from, double v, const char* fill) {
    const int y = 5 + static_cast<int>(row) * kRow;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + 13, escape(label));
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" data-v=\"{}\"><title>{}: {} "
        "{}</title></rect>",
        kLeft + from * scale, y, v * scale, kRow - 6, fill, num(v), escape(label), num(v), escape(unit));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}{} {}</text>", kLeft + (from + v) * scale + 4, y + 13,
                       row > 0 && row <= steps.size() ? "+" : "", num(v), escape(unit));
  };
  bar(0, start.first, 0, start.second, colour(2));
  double at = start.second;
  for (size_t i = 0; i < steps.size(); ++i) {
    bar(i + 1, steps[i].first, at, steps[i].second, colour(3));
    at += steps[i].second;
  }
  bar(steps.size() + 1, endLabel, 0, end, colour(0));
  return out + "</svg></figure>\n";
}

std::string heatMap(const std::string& title, const std::vector<std::string>& rowLabels,
                    const std::vector<std::string>& columnLabels, const std::vector<std::vector<double>>& values,
                    const std::string& unit) {
  double top = 0;
  for (const auto& row : values)
    for (double v : row) top = std::max(top, v);
  const size_t columns = columnLabels.size();
  const double cell = columns > 0 ? static_cast<double>(kWidth - kLeft - kRight) / static_cast<double>(columns) : 0;
  const int height = static_cast<int>(rowLabels.size()) * kRow + 30;
  std::string out = svgOpen(title, height);
  for (size_t i = 0; i < rowLabels.size(); ++i) {
    const int y = 5 + static_cast<int>(i) * kRow;
    out +=
        fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + 13, escape(rowLabels[i]));
    for (size_t j = 0; j < columns && j < values[i].size(); ++j) {
      const double v = values[i][j];
      out += fmt::format(
          "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{:.3f}\" "
          "data-v=\"{}\"><title>{}, {}: {} {}</title></rect>",
          kLeft + static_cast<double>(j) * cell, y, cell + 0.05, kRow - 2, colour(3), top > 0 ? v / top : 0, num(v),
          escape(rowLabels[i]), escape(columnLabels[j]), num(v), escape(unit));
    }
  }
  const int y = 5 + static_cast<int>(rowLabels.size()) * kRow + 12;
  if (columns > 0)
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text x=\"{}\" "
        "y=\"{}\">darkest: {} {}</text>",
        kLeft, y, escape(columnLabels.front()), kWidth - kRight, y, escape(columnLabels.back()), kWidth - kRight + 4,
        y - 12, num(top), escape(unit));
  return out + "</svg></figure>\n";
}

std::string stackedBars(const std::string& title, const std::vector<std::string>& categories,
                        const std::vector<Series>& rows, const std::string& unit) {
  double top = 0;
  for (const auto& r : rows) {
    double sum = 0;
    for (double v : r.values) sum += std::isnan(v) ? 0 : v;
    top = std::max(top, sum);
  }
  const int height = static_cast<int>(rows.size()) * kRow + 30;
  std::string out = svgOpen(title, height);
  const double scale = top > 0 ? (kWidth - kLeft - kRight) / top : 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = 5 + static_cast<int>(i) * kRow;
    out +=
        fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + 13, escape(rows[i].label));
    double x = kLeft, sum = 0;
    for (size_t c = 0; c < rows[i].values.size() && c < categories.size(); ++c) {
      const double v = std::isnan(rows[i].values[c]) ? 0 : rows[i].values[c];
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" data-v=\"{}\"><title>{} {}: {} "
          "{}</title></rect>",
          x, y, v * scale, kRow - 6, colour(c), num(v), escape(rows[i].label), escape(categories[c]), num(v),
          escape(unit));
      x += v * scale;
      sum += v;
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}</text>", x + 4, y + 13, num(sum), escape(unit));
  }
  out += legend(categories, height - 16);
  return out + "</svg></figure>\n";
}

std::string lineChart(const std::string& title, const std::vector<double>& xs, const std::vector<Series>& series,
                      const std::string& xLabel, const std::string& yLabel, bool logX,
                      const std::vector<std::string>& dashed) {
  const int height = 260, plotTop = 10, plotBottom = 200, left = 70, right = kWidth - 20;
  double ymax = 0;
  for (const auto& s : series)
    for (double v : s.values)
      if (!std::isnan(v)) ymax = std::max(ymax, v);
  if (ymax <= 0) ymax = 1;
  auto fx = [&](double x) { return logX ? std::log2(std::max(x, 1e-12)) : x; };
  double x0 = xs.empty() ? 0 : fx(xs.front()), x1 = xs.empty() ? 1 : fx(xs.back());
  for (double x : xs) {
    x0 = std::min(x0, fx(x));
    x1 = std::max(x1, fx(x));
  }
  if (x1 <= x0) x1 = x0 + 1;
  auto px = [&](double x) { return left + (fx(x) - x0) / (x1 - x0) * (right - left); };
  auto py = [&](double y) { return plotBottom - y / ymax * (plotBottom - plotTop); };
  std::string out = svgOpen(title, height);
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"currentColor\"/>", left, plotBottom, right,
                     plotBottom);
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"currentColor\"/>", left, plotTop, left,
                     plotBottom);
  for (int t = 0; t <= 4; ++t) {
    const double y = ymax * t / 4;
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", left - 4, py(y) + 4, tick(y));
  }
  if (!xs.empty()) {
    const size_t ticks = std::min<size_t>(xs.size(), 8);
    for (size_t t = 0; t < ticks; ++t) {
      const double x = xs[t * (xs.size() - 1) / std::max<size_t>(1, ticks - 1)];
      out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", px(x), plotBottom + 15,
                         logX ? sizeTick(x) : tick(x));
    }
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", (left + right) / 2, plotBottom + 32,
                     escape(xLabel));
  out += fmt::format("<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
                     (plotTop + plotBottom) / 2, (plotTop + plotBottom) / 2, escape(yLabel));
  std::vector<std::string> names;
  for (size_t s = 0; s < series.size(); ++s) {
    names.push_back(series[s].label);
    const bool dash = std::find(dashed.begin(), dashed.end(), series[s].label) != dashed.end();
    std::string points, dots;
    for (size_t i = 0; i < xs.size() && i < series[s].values.size(); ++i) {
      const double v = series[s].values[i];
      if (std::isnan(v)) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(xs[i]), py(v));
      if (xs.size() <= 64)
        dots += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" data-v=\"{}\"><title>{} at {}: "
            "{}</title></circle>",
            px(xs[i]), py(v), colour(s), num(v), escape(series[s].label), num(xs[i]), num(v));
    }
    out += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} points=\"{}\"><title>{}</title></polyline>{}",
        colour(s), dash ? " stroke-dasharray=\"5 4\"" : "", points, escape(series[s].label), dots);
  }
  out += legend(names, height - 16);
  return out + "</svg></figure>\n";
}

std::string grid(const std::string& title, const std::vector<std::string>& labels,
                 const std::vector<std::vector<std::string>>& cells, const std::vector<std::string>& classes) {
  const int cell = std::clamp(480 / std::max<int>(1, static_cast<int>(labels.size())), 6, 28);
  const int n = static_cast<int>(labels.size());
  const int height = 40 + n * cell + 30;
  std::string out = svgOpen(title, height);
  const int x0 = kLeft, y0 = 30;
  for (int i = 0; i < n; ++i) {
    if (cell >= 14) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", x0 - 4, y0 + i * cell + cell / 2 + 4,
                         escape(labels[i]));
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x0 + i * cell + cell / 2, y0 - 6,
                         escape(labels[i]));
    }
    for (int j = 0; j < n; ++j) {
      const std::string& c =
          i < static_cast<int>(cells.size()) && j < static_cast<int>(cells[i].size()) ? cells[i][j] : "";
      auto k = std::find(classes.begin(), classes.end(), c);
      const char* fill = c.empty() || k == classes.end() ? "none" : colour(static_cast<size_t>(k - classes.begin()));
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"currentColor\" "
          "stroke-opacity=\"0.2\"><title>{} to {}: {}</title></rect>",
          x0 + j * cell, y0 + i * cell, cell, cell, fill, escape(labels[i]), escape(labels[j]),
          c.empty() ? "-" : escape(c));
    }
  }
  out += legend(classes, height - 16);
  return out + "</svg></figure>\n";
}

Page::Page(std::string title) : title_(std::move(title)) {}

void Page::heading(int level, const std::string& text) {
  body_ += fmt::format("<h{0}>{1}</h{0}>\n", level, escape(text));
}
void Page::paragraph(const std::string& text) { body_ += "<p>" + escape(text) + "</p>\n"; }
void Page::raw(const std::string& markup) { body_ += markup; }

void Page::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table><thead><tr>";
  for (const auto& h : header) body_ += "<th>" + escape(h) + "</th>";
  body_ += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += "<td>" + escape(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table>\n";
}

std::string Page::finish() const {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{}</title>
<style>
:root {{ color-scheme: light dark; --bg: #ffffff; --fg: #1b1b1b; --muted: #5f6368; --line: #d0d7de; --card: #f6f8fa; }}
@media (prefers-color-scheme: dark) {{ :root {{ --bg: #0d1117; --fg: #e6edf3; --muted: #9da7b3; --line: #30363d; --card: #161b22; }} }}
body {{ background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, sans-serif; max-width: 980px; margin: 2em auto; padding: 0 1em; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.2em; border-bottom: 1px solid var(--line); padding-bottom: .2em; margin-top: 1.6em; }}
table {{ border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }}
th, td {{ border: 1px solid var(--line); padding: .25em .6em; text-align: left; vertical-align: top; }}
th {{ background: var(--card); }}
figure {{ margin: 1em 0; }} figcaption {{ font-weight: 600; margin-bottom: .3em; }}
.finding {{ border-left: 4px solid var(--muted); background: var(--card); padding: .4em .8em; margin: .5em 0; }}
.finding.critical {{ border-color: #D55E00; }} .finding.warning {{ border-color: #E69F00; }} .finding.info {{ border-color: #0072B2; }}
.fix {{ color: var(--muted); }} .muted {{ color: var(--muted); }}
@media print {{ body {{ max-width: none; margin: 0; color: #000; background: #fff; }} figure, table, .finding {{ break-inside: avoid; }} }}
</style></head>
<body>
{}</body></html>
)",
                     escape(title_), body_);
}

}  // namespace ddp::profiler::html
