// Command-line options made from a config table, for tools whose settings are options
// (`rdmq-bench --size 1024`) rather than KEY=VALUE pairs: one option per key, named as the key,
// with the key's documentation and default as its help; bool keys are flags.
//
//   spec.options = OptionsFromKeys(RunConfigDef().Describe(), {{"size", 's'}});
//   Result<ParsedArgs> args = spec.Parse(words);
//   Status s = ApplyOptions(RunConfigDef(), *args, &config);   // every option naming a key
//
// Errors from ApplyOptions: ConfigErrc::kUsage "--size 8: must be a byte count in [16, 1 GiB]",
// naming the option, the value and what is accepted; the target is unchanged on error.
// Threading: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rdmq/config/args.h"
#include "rdmq/config/config_def.h"

namespace rdmq::config {

// One OptionSpec per key, in table order; `short_names` gives some keys a one-letter form.
std::vector<OptionSpec> OptionsFromKeys(const std::vector<KeyDoc>& keys,
                                        const std::vector<std::pair<std::string, char>>& short_names = {});

// The kUsage error for a bad option value, from the kBadValue that ParseValue returned.
Status BadOption(const KeySpec& spec, std::string_view value);

// Sets, in order, every option of `args` that names a key of `def` (a flag sets its bool key to
// true); options that name no key are left to the caller.
template <class T>
Status ApplyOptions(const ConfigDef<T>& def, const ParsedArgs& args, T* target) {
  T updated = *target;
  for (const auto& [name, value] : args.values()) {
    const auto* key = def.Find(name);
    if (key == nullptr) continue;
    const std::string text = key->spec.type == Type::kBool && value.empty() ? "true" : value;
    if (!def.Set(&updated, name, text).ok()) return BadOption(key->spec, text);
  }
  *target = std::move(updated);
  return Status::Ok();
}

}  // namespace rdmq::config
