// Prints llama.cpp's GBNF for each JSON Schema read from stdin, one schema per line:
// each answer is "OK\n" or "ERROR\n", then the grammar or message, then a line "\x1e".
#include "json-schema-to-grammar.h"
#include <iostream>
#include <string>

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        try {
            std::string grammar = json_schema_to_grammar(common_json::parse(line));
            std::cout << "OK\n" << grammar;
        } catch (const std::exception & e) {
            std::cout << "ERROR\n" << e.what() << "\n";
        }
        std::cout << "\x1e\n" << std::flush;
    }
}
