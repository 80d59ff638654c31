// The --json records as JSON values (the fields: json_sink.h), apart from
// the sink so that what only writes them (main.cpp) does not compile
// nlohmann/json. Pure conversion, for tests and for the sink.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "model/sink.h"

namespace funclatency {

nlohmann::json function_to_json(const Report& report, const FunctionReport& function);
// One exemplar object, as in "exemplars" and in a slow_call line.
nlohmann::json slow_call_to_json(const SlowCall& call);
nlohmann::json slow_call_report_to_json(const SlowCallReport& slow);
std::string format_rfc3339(std::chrono::system_clock::time_point time);

}  // namespace funclatency
