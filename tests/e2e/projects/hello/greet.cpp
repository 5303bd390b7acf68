#include "greet.hpp"
std::string greet(const std::string& who) { return "hello, " + who; }
