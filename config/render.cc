#include "rdmq/config/render.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rdmq::config {
namespace {}  // namespace

std::string WrapText(std::string_view text, size_t indent, size_t width) {
  std::string out;
  std::string line;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j == i) break;
    const std::string_view word = text.substr(i, j - i);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    i = j;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

namespace {

std::string DefaultText(const KeyDoc& k) {
  std::string d = k.default_value.empty() ? "\"\"" : k.default_value;
  if (!k.default_human.empty()) d += " = " + k.default_human;
  return d;
}

std::string ReadBy(const KeyDoc& k) { return k.spec.component; }

std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      if (c == '|') out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

const char* const kSyntax =
    "Byte counts take a binary suffix (64KiB, 16MiB, 1GiB, 1TiB); durations a unit (500us, 250ms, 2s, "
    "5min, 1h, 7d), a plain number being in the unit the key's name ends with.";

std::string RenderKeysText(const std::vector<KeyDoc>& keys, size_t indent, size_t width) {
  std::string out;
  for (const KeyDoc& k : keys) {
    out += std::string(indent, ' ') + k.spec.name + "  (" + std::string(TypeName(k.spec.type)) +
           ", default " + DefaultText(k) + ", read by " + ReadBy(k) + ")\n";
    out += WrapText(k.spec.doc, indent + 4, width);
    out += WrapText("Accepts " + Accepted(k.spec) + ".", indent + 4, width);
  }
  return out;
}

std::string RenderKeysBrief(const std::vector<KeyDoc>& keys, size_t indent) {
  size_t w = 0;
  for (const KeyDoc& k : keys) w = std::max(w, k.spec.name.size());
  std::string out;
  for (const KeyDoc& k : keys) {
    out += std::string(indent, ' ') + k.spec.name + std::string(w - k.spec.name.size() + 2, ' ') +
           "default " + DefaultText(k) + "; " + Accepted(k.spec) + "\n";
  }
  return out;
}

std::string RenderText(const std::vector<TableDoc>& tables, size_t width) {
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i > 0) out += "\n";
    out += tables[i].name + " settings\n";
    out += WrapText(tables[i].summary, 2, width);
    out += "\n";
    out += RenderKeysText(tables[i].keys, 2, width);
  }
  out += "\n" + WrapText(kSyntax, 0, width);
  return out;
}

std::string RenderJson(const std::vector<TableDoc>& tables) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const TableDoc& t : tables) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const KeyDoc& k : t.keys) {
      nlohmann::ordered_json e;
      e["name"] = k.spec.name;
      e["type"] = TypeName(k.spec.type);
      e["default"] = k.default_value;
      e["accepted"] = Accepted(k.spec);
      e["doc"] = k.spec.doc;
      e["component"] = k.spec.component;
      switch (k.spec.type) {
        case Type::kDuration:
          e["unit"] = UnitName(k.spec.unit);
          [[fallthrough]];
        case Type::kInt:
        case Type::kBytes:
          e["min"] = k.spec.min;
          e["max"] = k.spec.max;
          break;
        case Type::kEnum: {
          auto choices = nlohmann::ordered_json::array();
          for (const Choice& c : k.spec.choices) choices.push_back(c.name);
          e["choices"] = choices;
          break;
        }
        case Type::kBool:
        case Type::kString:
          break;
      }
      keys.push_back(std::move(e));
    }
    j[t.name] = std::move(keys);
  }
  return j.dump(2) + "\n";
}

std::string RenderMarkdown(const std::vector<TableDoc>& tables, std::string_view intro) {
  std::ostringstream os;
  if (!intro.empty()) os << intro << (intro.back() == '\n' ? "" : "\n");
  for (const TableDoc& t : tables) {
    os << "\n## " << t.name << "\n\n" << t.summary << "\n\n";
    os << "| Key | Type | Default | Accepted values | Read by | Description |\n";
    os << "|-----|------|---------|-----------------|---------|-------------|\n";
    for (const KeyDoc& k : t.keys) {
      os << "| `" << k.spec.name << "` | " << TypeName(k.spec.type) << " | "
         << MarkdownCell(k.default_value.empty() ? "(empty)" : "`" + k.default_value + "`")
         << (k.default_human.empty() ? "" : " (" + k.default_human + ")") << " | "
         << MarkdownCell(Accepted(k.spec)) << " | " << ReadBy(k) << " | " << MarkdownCell(k.spec.doc)
         << " |\n";
    }
  }
  return os.str();
}

}  // namespace rdmq::config
