#include "cli/cli.hpp"

int main(int argc, char** argv) { return memgate::cli_main(argc, argv); }
