// Beside the README's ChatController: the other APIs and the registry, injected the way the
// README injects Switchboard (SwitchboardModule is global), DeploymentRegistry from the root.
import { Controller, Get, Post, Query } from '@nestjs/common';
import { DeploymentRegistry, Switchboard } from 'nestjs-switchboard';

@Controller('apis')
export class ApisController {
  constructor(
    private readonly sb: Switchboard,
    private readonly registry: DeploymentRegistry,
  ) {}

  @Get('stream')
  async stream(@Query('q') q = 'Hello!'): Promise<string> {
    const stream = await this.sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: q }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  }

  @Get('messages')
  async messages(@Query('q') q = 'Hello!'): Promise<string> {
    const message = await this.sb.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 256,
      messages: [{ role: 'user', content: q }],
    });
    return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  }

  @Get('responses')
  async responses(@Query('q') q = 'Hello!'): Promise<string> {
    const response = await this.sb.responses.create({ model: 'gpt-4o-mini', input: q });
    return response.output_text;
  }

  @Get('embeddings')
  async embeddings(@Query('q') q = 'Hello!'): Promise<number> {
    const result = await this.sb.embeddings.create({ model: 'text-embedding-3-small', input: q });
    return result.data[0]?.embedding.length ?? 0;
  }

  /** Every deployment of `model` marked down by hand, as an outage would leave them. */
  @Post('down')
  down(@Query('model') model = 'gpt-4o-mini'): string[] {
    const pool = this.registry.poolFor(model);
    for (const deployment of pool) deployment.models.get(model)!.markDown(600_000);
    return pool.map((d) => d.name);
  }
}
