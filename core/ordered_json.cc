#include "core/ordered_json.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace wavecrest {
namespace {

using Json = nlohmann::ordered_json;

// Builds the document as nlohmann's own DOM parser does, but appends an object's members to its
// vector directly, with their places in a hash index (ordered_map's emplace searches linearly).
class OrderedDomBuilder final : public nlohmann::json_sax<Json> {
 public:
  Json& result() { return root_; }
  const std::string& error() const { return error_; }

  bool null() override { return Put(Json(nullptr)); }
  bool boolean(bool v) override { return Put(Json(v)); }
  bool number_integer(number_integer_t v) override { return Put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Put(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Put(Json(v)); }
  bool string(string_t& v) override { return Put(Json(std::move(v))); }
  bool binary(binary_t&) override { return false; }  // JSON text has none
  bool start_object(std::size_t) override {
    Json* made = Put(Json::object());
    open_.push_back({made, {}});
    return true;
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Json* made = Put(Json::array());
    open_.push_back({made, {}});
    return true;
  }
  bool end_array() override {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

 private:
  struct Open {
    Json* value;
    absl::flat_hash_map<std::string, size_t> index;  // an object's keys -> their places
  };

  // Places `v` where the parse is (the root, the open array's end, or the open object's key) and
  // returns where it now lives. Only the innermost open container grows, and none of the open
  // containers lives inside it, so the pointers on the stack stay valid.
  Json* Put(Json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Open& top = open_.back();
    if (top.value->is_array()) {
      auto& array = top.value->get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    auto& object = top.value->get_ref<Json::object_t&>();
    auto [it, inserted] = top.index.try_emplace(key_, object.size());
    if (!inserted) {
      Json& earlier = (object.begin() + static_cast<std::ptrdiff_t>(it->second))->second;
      earlier = std::move(v);
      return &earlier;
    }
    object.Container::emplace_back(std::move(key_), std::move(v));
    return &object.back().second;
  }

  Json root_;
  std::vector<Open> open_;
  std::string key_;
  std::string error_;
};

}  // namespace

absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text) {
  OrderedDomBuilder builder;
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
  if (!ok) {
    return absl::InvalidArgumentError(
        builder.error().empty() ? "not JSON" : absl::StrCat("not JSON: ", builder.error()));
  }
  return std::move(builder.result());
}

}  // namespace wavecrest
