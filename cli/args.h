#pragma once
// A small, strict flag parser for the verbs: every flag is declared; unknown flags, missing
// values and bad numbers are UsageErrors naming the verb.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ncclrr::cli {

class Args {
 public:
  Args(std::string verb, const std::vector<std::string>& args);

  // Declarations. `Flag` has no value; `Option` takes one ("--x V" or "--x=V").
  Args& Flag(const std::string& name);
  Args& Option(const std::string& name);
  // Parses; positional arguments are collected; "--" ends flags (the rest is `rest()`).
  void Parse();

  bool Has(const std::string& name) const;
  std::optional<std::string> Get(const std::string& name) const;
  std::string GetOr(const std::string& name, const std::string& fallback) const;
  long long GetInt(const std::string& name, long long fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& rest() const { return rest_; }
  // Exactly `n` positionals, else UsageError naming `what`.
  const std::string& Positional(size_t i, const std::string& what) const;

 private:
  std::string verb_;
  std::vector<std::string> raw_;
  std::map<std::string, bool> declared_;  // name -> takes a value
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_, rest_;
};

}  // namespace ncclrr::cli
