// Listings of config tables: the text of `rdmq config list` and of `--help`, its JSON form, and
// the Markdown of docs/configuration.md.
//
//   std::vector<TableDoc> t = {{"producer", "...", ProducerConfigDef().Describe()}};
//   std::cout << RenderText(t);
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rdmq/config/config_def.h"

namespace rdmq::config {

struct TableDoc {
  std::string name;     // "broker"
  std::string summary;  // where the keys are given (a file, --set, -X), one paragraph
  std::vector<KeyDoc> keys;
};

// The words of `text` wrapped to `width` columns, each line indented by `indent` spaces.
std::string WrapText(std::string_view text, size_t indent, size_t width = 100);
// One paragraph on the syntax of byte counts and durations (ends RenderText and --help texts).
extern const char* const kSyntax;

// Per key: "name  (type, default VALUE)", then the doc and the accepted values, wrapped to
// `width` and indented by `indent`. Tables are headed by their name and summary.
std::string RenderText(const std::vector<TableDoc>& tables, size_t width = 100);
std::string RenderKeysText(const std::vector<KeyDoc>& keys, size_t indent, size_t width = 100);
// One line per key: "name  default VALUE; accepts ..." (for tools whose --help points to
// `rdmq config list` for the docs).
std::string RenderKeysBrief(const std::vector<KeyDoc>& keys, size_t indent);
// {"broker": [{"name":..., "type":..., "default":..., "accepted":..., "doc":..., "component":...,
//   "min"/"max" (numbers), "choices" (enums), "unit" (durations)}, ...], ...}
std::string RenderJson(const std::vector<TableDoc>& tables);
// A Markdown document: `intro` (may be empty), then per table a heading, its summary and a
// table of its keys.
std::string RenderMarkdown(const std::vector<TableDoc>& tables, std::string_view intro);

}  // namespace rdmq::config
