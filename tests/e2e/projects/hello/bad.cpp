// Deliberately broken: the transparency test compares this failure.
int broken( { return 0; }
