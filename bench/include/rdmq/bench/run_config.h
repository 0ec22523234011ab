// Every setting of `rdmq-bench run` as one config table ("bench"): the workload, how the run is
// watched, and where its results go. rdmq-bench's options are made from it (an option per key,
// named as the key), `rdmq config list bench` lists it and docs/configuration.md holds it.
//
//   RunConfig c;
//   Status s = RunConfigDef().Set(&c, "size", "1KiB");      // or ApplyOptions from a command line
//
// Errors: as ConfigDef::Set (the key, the value and what is accepted).
// Threading: the table is immutable once built.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rdmq/bench/driver.h"
#include "rdmq/bench/system.h"
#include "rdmq/config/config_def.h"

namespace rdmq::bench {

struct RunConfig {
  Workload workload;
  RunOptions run;
  std::string json_path;  // "" = no JSON file
  std::string plot_path;  // "" = no plot
  bool vs_mem = false;    // also run mem on the same workload and report the ratio
};

const config::ConfigDef<RunConfig>& RunConfigDef();

// The one-letter forms of the common options: -p, -c, -s, -n, -d, -w.
const std::vector<std::pair<std::string, char>>& RunShortOptions();

}  // namespace rdmq::bench
