// Built with -Os -fcf-protection=branch: gcc turns the self tail call into
// `jmp` to the instruction right after the endbr64, so the entry probe of a
// tracer that skips the endbr64 would count every node as a call.
#include "cet_functions.h"

void cet_walk(CetNode* node) {
  if (node == nullptr) return;
  ++node->visits;
  cet_walk(node->next);
}
