// libfmt's compiled part, built into memgate itself for the packages
// (MEMGATE_PORTABLE): Debian ships libfmt only as a shared library, and a
// wheel must not need the build machine's libfmt or libstdc++. The
// objects of memgate_lib stay those of the normal build (calls into
// libfmt); this one translation unit defines what they call: fmt's
// out-of-line functions (FMT_FUNC, not inline outside header-only mode)
// and the templates they use, for char.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
