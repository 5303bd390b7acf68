// Placeholder: replaced by the real memjob.
int main() { return 0; }
